#!/bin/sh
# HTTP probes per CPU-second of a real `vigil agent` checker process, side by side in the same
# run with Prometheus' blackbox_exporter probing the same targets, for one or more vigil
# binaries run in turn (for example the base commit's and this tree's).
#
# usage: sh checker/testdata/bench-probes.sh [NAME=VIGIL_BINARY ...] [-- probebench flags]
#   git worktree add /tmp/vigil-base <base commit> && (cd /tmp/vigil-base && go build -o /tmp/vigil-base.bin ./cmd/vigil)
#   sh checker/testdata/bench-probes.sh base=/tmp/vigil-base.bin -- -rounds 3
# This tree's vigil is always built and run, named "tree-keepalive": its checks opt in to
# connection reuse (`keep_alive: true`, TREE_CHECKS; off by default), which is what the
# figure measures; TREE_CHECKS= (empty) runs them as checks are by default, a fresh
# connection per probe, named "tree". A NAME=BINARY@YAML spec adds the line YAML to every
# check of that binary (a binary of 980ceec reuses without asking; one before it never
# does, and one that does not know keep_alive refuses it). blackbox_exporter is built from its
# Go module (BBE_VERSION, default v0.27.0) in a scratch module outside the repository, unless
# BBE names a binary. Flags after -- go to checker/testdata/probebench (-checks 3000,
# -interval 1s, -rounds 3, -warm 10s, -window 20s, -bbe-checks 300, -ports 64).
set -eu
cd "$(dirname "$0")/../.."
SPECS=""
while [ $# -gt 0 ]; do
	case $1 in
	--) shift; break ;;
	*) SPECS="$SPECS,$1"; shift ;;
	esac
done
BIN=$(mktemp -d "${TMPDIR:-/tmp}/bench-probes.XXXXXX")
trap 'rm -rf "$BIN"' EXIT INT TERM
go build -o "$BIN/vigil" ./cmd/vigil
go build -o "$BIN/probebench" ./checker/testdata/probebench
if [ -z "${BBE:-}" ]; then
	mkdir "$BIN/bbe"
	printf 'module example.invalid/bbe\n\ngo 1.26\n\nrequire github.com/prometheus/blackbox_exporter %s\n' "${BBE_VERSION:-v0.27.0}" >"$BIN/bbe/go.mod"
	(cd "$BIN/bbe" && GOFLAGS=-mod=mod go build -o "$BIN/blackbox_exporter" github.com/prometheus/blackbox_exporter)
	BBE=$BIN/blackbox_exporter
fi
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' (with uncommitted changes)'); blackbox_exporter: $("$BBE" --version 2>&1 | head -1)"
TREE_CHECKS=${TREE_CHECKS-keep_alive: true}
if [ -n "$TREE_CHECKS" ]; then
	TREE="tree-keepalive=$BIN/vigil@$TREE_CHECKS"
else
	TREE="tree=$BIN/vigil"
fi
"$BIN/probebench" -vigil "${SPECS#,}${SPECS:+,}$TREE" -bbe "$BBE" "$@"
