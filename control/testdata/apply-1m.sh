#!/bin/sh
# A document of CHECKS http checks, each deciding a multivalue A record set (what `vigil load
# document` writes), applied with `vigil apply` to one voter (vigil agent -roles control, its
# log on disk) in a private network namespace: the document's size as YAML and as sent
# (vigil apply compresses a document over 32 MiB), how long the apply took, and the voter's
# resident memory (peak, VmHWM, and after), sampled every second. Then, beside it, the
# item-by-item path on the same voter: ITEMS checks written one request each by 16 clients
# (`vigil load writes`), and the time that rate gives for CHECKS checks and their record sets.
# With PART, the document is a YAML stream of parts of at most PART checks or record sets
# (`vigil load document -part`), which the voter decodes one part at a time; 0, one document.
#
# usage: sudo sh control/testdata/apply-1m.sh VIGIL [CHECKS] [ITEMS] [PART]
#   go build -o /tmp/vigil ./cmd/vigil && sudo sh control/testdata/apply-1m.sh /tmp/vigil 1000000 20000 50000
set -eu
[ $# -ge 1 ] || { sed -n 2,13p "$0"; exit 2; }
BIN=$1
CHECKS=${2:-1000000}
ITEMS=${3:-20000}
PART=${4:-0}
NS=config-apply1m-$$
DIR=$(mktemp -d /tmp/config-apply1m.XXXXXX)
PID=""
SAMPLER=""
cleanup() {
	[ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null || true
	[ -z "$PID" ] || kill "$PID" 2>/dev/null || true
	wait 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$NS"
ip -n "$NS" link set lo up
echo apply-token >"$DIR/token"
export VIGIL_TOKEN=apply-token
now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{printf "%.1f", $1 - $2}'; }
rss() { awk -v k="$2" '$1 == k ":" {printf "%d", $2 / 1024}' "/proc/$1/status"; }

ip netns exec "$NS" "$BIN" agent -roles control -id voter -data-dir "$DIR/voter" -raft-addr 127.0.0.1:7000 \
	-api-addr 127.0.0.1:7100 -bootstrap -token-file "$DIR/token" -open-reads -http off -log-level warn \
	>"$DIR/voter.log" 2>&1 &
PID=$!
i=0
until ip netns exec "$NS" curl -fsS http://127.0.0.1:7100/v1/cluster 2>/dev/null | grep -q '"leader": "voter"'; do
	i=$((i + 1)); [ $i -lt 300 ] || { echo "no leader" >&2; cat "$DIR/voter.log" >&2; exit 1; }; sleep 0.1
done
"$BIN" load document -checks "$CHECKS" -protocol http -target 127.0.0.1:8080 -path /healthz -interval 300s -part "$PART" >"$DIR/doc.yaml"
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "document: $CHECKS checks and record sets, $(wc -c <"$DIR/doc.yaml") bytes of YAML in $(($(grep -c '^---' "$DIR/doc.yaml" || true) + 1)) part(s), $(gzip -1 -c "$DIR/doc.yaml" | wc -c) bytes gzip-compressed (level 1, as vigil apply sends it)"
echo "voter before the apply: resident $(rss $PID VmRSS) MiB"
(while kill -0 "$PID" 2>/dev/null; do echo "$(rss $PID VmRSS)"; sleep 1; done >"$DIR/rss") &
SAMPLER=$!
start=$(now)
ip netns exec "$NS" "$BIN" apply -f "$DIR/doc.yaml" -server http://127.0.0.1:7100 -timeout 900s
took=$(since "$start")
echo "vigil apply returned after $took s (load $(cut -d' ' -f1-3 /proc/loadavg))"
sleep 5
echo "voter: peak resident $(rss $PID VmHWM) MiB (VmHWM), resident 5 s after $(rss $PID VmRSS) MiB; raft log $(du -sm "$DIR/voter/control" | cut -f1) MiB on disk"
kill "$SAMPLER" 2>/dev/null || true
SAMPLER=""
ip netns exec "$NS" curl -fsS "http://127.0.0.1:7100/v1/checks/c$((CHECKS - 1))" | grep -q '"id"' &&
	echo "the last check, c$((CHECKS - 1)), reads back"
out=$(ip netns exec "$NS" "$BIN" load writes -server http://127.0.0.1:7100 -clients 16 -writes "$ITEMS" -duration 600s -spread 100000 -prefix item 2>&1 | head -1 || true)
echo "item by item, 16 clients, $ITEMS checks: $out"
rate=$(echo "$out" | sed -n 's/.* \([0-9.]*\) writes\/s.*/\1/p')
[ -z "$rate" ] || echo "at that rate, $CHECKS checks and their $CHECKS record sets ($((2 * CHECKS)) writes) take $(echo "$rate $CHECKS" | awk '{printf "%.0f", 2 * $2 / $1}') s"
echo "voter after the item writes: peak resident $(rss $PID VmHWM) MiB; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
