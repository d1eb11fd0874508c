#!/bin/sh
# Where the voters' CPU goes during control-plane writes: three voters of VIGIL (as in
# bench-writes.sh: raft over TCP in a private network namespace, HELD checks applied), loaded
# by `vigil load writes` with CLIENTS clients for SECONDS while `perf record` samples the
# three processes at 999 Hz; each sample is then counted under the first of these parts its
# stack passes through, and the parts are printed as shares and as CPU per write.
#
# usage: sudo sh control/testdata/profile-writes.sh VIGIL CLIENTS SECONDS [HELD]
#   (needs perf: apt-get install -y linux-perf); VIGIL named wal:PATH runs the voters with
#   -raft-log-store wal, as in bench-writes.sh.
set -eu
[ $# -ge 3 ] || { sed -n 2,11p "$0"; exit 2; }
BIN=${1#wal:} CLIENTS=$2 SECONDS_=$3 HELD=${4:-10000}
store=""
[ "$BIN" = "$1" ] || store="-raft-log-store wal"
NS=config-prof-$$
DIR=$(mktemp -d /tmp/config-prof.XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT INT TERM
ip netns add "$NS"
ip -n "$NS" link set lo up
in_ns() { ip netns exec "$NS" "$@"; }
echo bench-token >"$DIR/token"
export VIGIL_TOKEN=bench-token
wait_for() { # url pattern
	i=0
	until in_ns curl -fsS "$1" 2>/dev/null | grep -q "$2"; do
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "timed out waiting for $1 to show $2" >&2; exit 1; }
		sleep 0.1
	done
}
for i in 0 1 2; do
	extra="-bootstrap $store"
	[ $i -eq 0 ] || extra="-join http://127.0.0.1:7100 -raft-secret-file $DIR/v0/control/raft-secret $store"
	ip netns exec "$NS" "$BIN" agent -roles control -id v$i -data-dir "$DIR/v$i" -raft-addr 127.0.0.1:700$i \
		-api-addr 127.0.0.1:710$i -token-file "$DIR/token" -open-reads -log-level warn $extra \
		>"$DIR/v$i.log" 2>&1 &
	PIDS="$PIDS $!"
	[ $i -eq 0 ] && wait_for http://127.0.0.1:7100/v1/cluster '"leader": "v0"'
done
wait_for http://127.0.0.1:7100/v1/cluster '"v2": "127.0.0.1:7002"'
"$BIN" load document -checks "$HELD" >"$DIR/doc.yaml"
in_ns "$BIN" apply -f "$DIR/doc.yaml" -server http://127.0.0.1:7100 -timeout 120s >/dev/null
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
perf record -F 999 -g -o "$DIR/perf.data" -p "$(echo $PIDS | tr ' ' ',')" -- sleep "$SECONDS_" >/dev/null 2>&1 &
PERF=$!
out=$(in_ns "$BIN" load writes -server http://127.0.0.1:7100 -clients "$CLIENTS" -duration "${SECONDS_}s" -prefix p 2>&1 | head -1 || true)
wait $PERF || true
echo "$out"
writes=$(echo "$out" | sed -n 's/.*: \([0-9]*\) writes in.*/\1/p')
perf script -i "$DIR/perf.data" 2>/dev/null | awk -v writes="${writes:-0}" '
BEGIN {
	n = split("log store writes (StoreLogs)|StoreLogs;" \
		"log store reads (GetLog)|).GetLog;" \
		"state machine apply, 3 voters|raft.(*Raft).runFSM;" \
		"API: decoding the body|control.decodeCheck;" \
		"API: validating + encoding + handing to raft|control.(*Server).Apply;" \
		"API: net/http and the rest of the handler|net/http.(*conn).serve,net/http.(*connReader);" \
		"raft transport and replication|NetworkTransport,pipelineSend,pipelineDecode,pipelineReplicate,replicate,newNetPipeline;" \
		"raft main loops (other)|raft.(*Raft).run,raft.(*raftState).goFunc;" \
		"garbage collector|gcBgMarkWorker,gcenable,bgsweep,bgscavenge;" \
		"runtime sysmon|runtime.sysmon;" \
		"scheduler, idle, thread wake-ups|runtime.mcall,runtime.park_m,runtime.schedule,runtime.findRunnable,runtime.mstart", parts, ";")
	for (i = 1; i <= n; i++) { split(parts[i], f, "|"); name[i] = f[1]; keys[i] = f[2] }
	name[n + 1] = "other"
}
function flush(   i, k, ks, m) {
	if (stack == "") return
	samples++
	for (i = 1; i <= n; i++) {
		m = split(keys[i], ks, ",")
		for (k = 1; k <= m; k++) if (index(stack, ks[k])) { count[i]++; stack = ""; return }
	}
	count[n + 1]++; stack = ""
}
/^$/ { flush(); next }
/^[ \t]/ { stack = stack " " $2; next }
{ stack = "" }
END {
	flush()
	printf "%d samples (about %d ms of CPU), %d writes\n", samples, samples, writes
	for (i = 1; i <= n + 1; i++)
		printf "%5.1f%%  %6.0f us per write  %s\n", 100 * count[i] / samples, writes ? count[i] * 1000 / writes : 0, name[i]
}'
