#!/bin/sh
# apply-1m.sh with three voters: a document of CHECKS http checks, each deciding a multivalue A
# record set, applied with `vigil apply` to the leader of three voters (vigil agent -roles
# control, real processes in a private network namespace, raft over TCP, their logs in their
# own data directories on disk, store STORE: wal or boltdb). It prints how long the apply took,
# how long after it returned each follower had applied it (or that one did not within
# CATCHUP_SECONDS), each voter's peak resident memory (VmHWM) and its data directory on disk.
# Then the snapshots: ITEMS more writes, from one client so one raft entry each, pass raft's
# snapshot threshold (256 entries); the voters snapshot on their own schedule (every 2 to 4
# minutes), and the script waits for every voter's snapshot of the document; then
#   1. a follower restarted on its own data directory restores its snapshot and catches up;
#   2. that follower is removed, its data directory deleted, and it joins again empty: the
#      leader sends it the snapshot (InstallSnapshot) and it restores and catches up;
# each with its time to catch up and the new process' peak resident memory. Resident memory
# and applied indexes are sampled every second into DIR/samples (kept with KEEP=1).
# MEMLIMIT sets the voters' -memory-limit (e.g. 3GiB); empty, none.
#
# usage: sudo sh control/testdata/apply-1m-voters.sh VIGIL [CHECKS] [PART] [STORE] [ITEMS]
#   go build -o /tmp/vigil ./cmd/vigil && sudo MEMLIMIT=3GiB sh control/testdata/apply-1m-voters.sh /tmp/vigil 1000000 50000 wal
set -eu
[ $# -ge 1 ] || { sed -n 2,20p "$0"; exit 2; }
BIN=$1
CHECKS=${2:-1000000}
PART=${3:-50000}
STORE=${4:-wal}
ITEMS=${5:-600}
MEMLIMIT=${MEMLIMIT:-}
CATCHUP_SECONDS=${CATCHUP_SECONDS:-900}
KEEP=${KEEP:-0}
NS=config-voters1m-$$
DIR=$(mktemp -d /tmp/config-voters1m.XXXXXX)
SAMPLER=""
cleanup() {
	[ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null || true
	for i in 0 1 2; do
		[ -f "$DIR/v$i.pid" ] && kill "$(cat "$DIR/v$i.pid")" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
	if [ "$KEEP" = 1 ]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$NS"
ip -n "$NS" link set lo up
in_ns() { ip netns exec "$NS" "$@"; }
echo apply-token >"$DIR/token"
export VIGIL_TOKEN=apply-token
now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{printf "%.1f", $1 - $2}'; }
pid() { cat "$DIR/v$1.pid"; }
rss() { v=$(awk -v k="$2" '$1 == k ":" {printf "%d", $2 / 1024}' "/proc/$1/status" 2>/dev/null || true); echo "${v:--}"; }
# metric I NAME: a gauge of voter I's /metrics, empty when it does not answer.
metric() { in_ns curl -fsS -m 5 "http://127.0.0.1:710$1/metrics" 2>/dev/null | awk -v n="$2" '$1 == n {printf "%d", $2}'; }
# The index of the state voter I serves: raft's applied index runs ahead of it while a voter
# restores a snapshot or decodes an entry, and a read at that index could miss what it applied.
applied() { metric "$1" vigil_control_config_index; }
stateindex() { metric "$1" vigil_control_config_index; }
leader() { # the index of the leading voter, from voter 0's view (or any voter's)
	for i in 0 1 2; do
		l=$(in_ns curl -fsS -m 5 "http://127.0.0.1:710$i/v1/cluster" 2>/dev/null | sed -n 's/.*"leader": "v\([0-9]\)".*/\1/p')
		[ -z "$l" ] || { echo "$l"; return; }
	done
}
wait_for() { # url pattern
	i=0
	until in_ns curl -fsS "$1" 2>/dev/null | grep -q "$2"; do
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "timed out waiting for $1 to show $2" >&2; exit 1; }
		sleep 0.1
	done
}
# start I EXTRA...: voter I in the namespace, its pid in DIR/vI.pid (appended log). Not
# through in_ns, whose pid would be a subshell's.
start() {
	i=$1
	shift
	ml=""
	# Every voter but the first, which generates it, reads the cluster secret from a copy.
	[ ! -f "$DIR/raft-secret" ] || ml="-raft-secret-file $DIR/raft-secret"
	[ -z "$MEMLIMIT" ] || ml="$ml -memory-limit $MEMLIMIT"
	ip netns exec "$NS" "$BIN" agent -roles control -id v$i -data-dir "$DIR/v$i" -raft-addr 127.0.0.1:700$i \
		-api-addr 127.0.0.1:710$i -token-file "$DIR/token" -open-reads -http off -log-level info \
		-raft-log-store "$STORE" $ml "$@" >>"$DIR/v$i.log" 2>&1 &
	echo $! >"$DIR/v$i.pid"
}
# caught_up I TARGET: seconds until voter I has applied TARGET, or "not within N s".
caught_up() {
	t0=$(now)
	while :; do
		a=$(applied "$1")
		[ -n "$a" ] && [ "$a" -ge "$2" ] && { since "$t0"; return; }
		[ "$(since "$t0" | cut -d. -f1)" -lt "$CATCHUP_SECONDS" ] || { echo "not within $CATCHUP_SECONDS s (applied ${a:-?} of $2)"; return; }
		sleep 0.2
	done
}
snapshots() { # the snapshots on voter I's disk: "index size", newest last
	for s in "$DIR/v$1"/control/snapshots/*/; do
		[ -d "$s" ] || continue
		echo "$(basename "$s" | cut -d- -f2) $(du -sm "$s" | cut -f1)MiB"
	done | sort -n | tail -1
}

start 0 -bootstrap
wait_for http://127.0.0.1:7100/v1/cluster '"leader": "v0"'
cp "$DIR/v0/control/raft-secret" "$DIR/raft-secret"
for i in 1 2; do
	start $i -join http://127.0.0.1:7100
done
wait_for http://127.0.0.1:7100/v1/cluster '"v2": "127.0.0.1:7002"'
"$BIN" load document -checks "$CHECKS" -protocol http -target 127.0.0.1:8080 -path /healthz -interval 300s -part "$PART" >"$DIR/doc.yaml"
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "voters: 3, raft log store $STORE, memory limit ${MEMLIMIT:-none}; $(sh -c 'git -C "$(dirname "$0")" rev-parse --short HEAD' "$0" 2>/dev/null || true)"
echo "document: $CHECKS checks and record sets, $(wc -c <"$DIR/doc.yaml") bytes of YAML in $(($(grep -c '^---' "$DIR/doc.yaml" || true) + 1)) part(s)"
echo "voters before the apply: resident $(rss "$(pid 0)" VmRSS) / $(rss "$(pid 1)" VmRSS) / $(rss "$(pid 2)" VmRSS) MiB"
(
	echo "seconds rss0 rss1 rss2 applied0 applied1 applied2"
	t0=$(now)
	while :; do
		echo "$(since "$t0") $(rss "$(pid 0)" VmRSS) $(rss "$(pid 1)" VmRSS) $(rss "$(pid 2)" VmRSS) $(applied 0 | sed 's/^$/-/') $(applied 1 | sed 's/^$/-/') $(applied 2 | sed 's/^$/-/')"
		sleep 1
	done
) >"$DIR/samples" &
SAMPLER=$!
elections() { cat "$DIR"/v?.log | grep -c 'entering leader state' || true; }
peaks() {
	for i in 0 1 2; do
		echo "v$i: peak resident $(rss "$(pid $i)" VmHWM) MiB (VmHWM), resident now $(rss "$(pid $i)" VmRSS) MiB; data directory $(du -sm "$DIR/v$i" | cut -f1) MiB"
	done
}
e0=$(elections)
start=$(now)
if ! in_ns "$BIN" apply -f "$DIR/doc.yaml" -server http://127.0.0.1:7100 -timeout 1800s; then
	echo "vigil apply failed after $(since "$start") s (load $(cut -d' ' -f1-3 /proc/loadavg)); leaders elected meanwhile: $(($(elections) - e0))"
	peaks
	exit 1
fi
took=$(since "$start")
echo "leaders elected during the apply: $(($(elections) - e0)) (a voter that loses the lead while it decodes forwards the document to the new leader, which decodes it again)"
l=$(leader)
target=$(stateindex "$l")
doc_index=$target
echo "vigil apply returned after $took s (load $(cut -d' ' -f1-3 /proc/loadavg)); leader v$l's state index $target; applied then: v0 $(applied 0), v1 $(applied 1), v2 $(applied 2)"
for i in 0 1 2; do
	[ "$i" -eq "$l" ] || echo "follower v$i applied it $(caught_up $i "$target") s after the apply returned"
done
peaks
for i in 0 1 2; do
	if in_ns curl -fsS "http://127.0.0.1:710$i/v1/checks/c$((CHECKS - 1))" | grep -q '"id"'; then
		echo "v$i reads back the last check, c$((CHECKS - 1))"
	else
		echo "v$i does not read back the last check, c$((CHECKS - 1)): $(in_ns curl -sS "http://127.0.0.1:710$i/v1/checks/c$((CHECKS - 1))" | head -c 300)"
	fi
done

# Snapshots: pass the threshold, then wait for each voter's own schedule.
in_ns "$BIN" load writes -server http://127.0.0.1:7100 -clients 1 -writes "$ITEMS" -duration 300s -spread 100000 -prefix item 2>&1 | head -1
target=$(stateindex "$(leader)")
t0=$(now)
for i in 0 1 2; do
	while :; do
		s=$(snapshots $i)
		[ -n "$s" ] && [ "${s%% *}" -ge "$doc_index" ] && break
		[ "$(since "$t0" | cut -d. -f1)" -lt 600 ] || { echo "v$i: no snapshot of the document within 600 s (newest: ${s:-none})"; break; }
		sleep 1
	done
	echo "v$i: snapshot at index ${s%% *}, ${s#* } on disk, $(since "$t0") s after the writes; peak resident since start $(rss "$(pid $i)" VmHWM) MiB"
done

# 1. A follower restarted on its own data directory restores its own snapshot.
f=$(( ($(leader) + 1) % 3 ))
kill "$(pid $f)"
while kill -0 "$(pid $f)" 2>/dev/null; do sleep 0.1; done
start $f
target=$(stateindex "$(leader)")
echo "follower v$f restarted on its data directory: applied the leader's index $target after $(caught_up $f "$target") s; peak resident $(rss "$(pid $f)" VmHWM) MiB"

# 2. The same follower removed, emptied and joined again: the leader sends its snapshot.
l=$(leader)
in_ns curl -fsS -X DELETE -H "Authorization: Bearer apply-token" "http://127.0.0.1:710$l/v1/cluster/voters/v$f" >/dev/null
kill "$(pid $f)"
while kill -0 "$(pid $f)" 2>/dev/null; do sleep 0.1; done
rm -rf "$DIR/v$f"
start $f -join "http://127.0.0.1:710$l"
target=$(stateindex "$l")
echo "follower v$f emptied and joined again: applied the leader's index $target after $(caught_up $f "$target") s; peak resident $(rss "$(pid $f)" VmHWM) MiB"
echo "  its log: $(grep -h 'copied to local snapshot\|Installed remote snapshot' "$DIR/v$f.log" | tail -2 | sed 's/.*msg="raft: \([^"]*\)".*/\1/' | tr '\n' ';')"
echo "  the leader's snapshots: $(grep -h 'starting snapshot up to\|snapshot complete up to\|installing snapshot on' "$DIR/v$l.log" | sed 's/^time=[^T]*T\([^Z]*\)Z.*msg="raft: \([^"]*\)".*/\1 \2/' | tr '\n' ';')"
in_ns curl -fsS "http://127.0.0.1:710$f/v1/checks/c$((CHECKS - 1))" | grep -q '"id"' &&
	echo "v$f reads back the last check, c$((CHECKS - 1))"
for i in 0 1 2; do
	echo "v$i: peak resident $(rss "$(pid $i)" VmHWM) MiB over the whole run (this process)"
done
kill "$SAMPLER" 2>/dev/null || true
SAMPLER=""
echo "peak resident sampled each second, per voter: $(awk 'NR > 1 { for (i = 2; i <= 4; i++) if ($i + 0 > m[i]) m[i] = $i + 0 } END { printf "%d / %d / %d MiB", m[2], m[3], m[4] }' "$DIR/samples")"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
