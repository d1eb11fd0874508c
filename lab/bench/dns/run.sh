#!/bin/sh
# Vigil, NSD and Knot side by side under dnsperf on loopback: builds vigil and the harness
# from this tree into a temporary directory, runs the harness with the arguments given
# (-rounds N, -duration 10s, ...: lab/bench/dns/README.md) and prints its Markdown tables.
set -eu
cd "$(dirname "$0")/../../.."
bin=$(mktemp -d "${TMPDIR:-/tmp}/dnsbench-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT INT TERM
go build -o "$bin/vigil" ./cmd/vigil
go build -o "$bin/dnsbench" ./lab/bench/dns
"$bin/dnsbench" -vigil "$bin/vigil" "$@"
