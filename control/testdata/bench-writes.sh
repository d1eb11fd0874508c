#!/bin/sh
# Control-plane writes, side by side in one run: for each vigil binary named (for example one
# built at the base commit and one at HEAD), three voters (vigil agent -roles control, raft
# over TCP, logs synced on disk) in a private network namespace, holding HELD checks applied
# as one document, loaded by `vigil load writes` (of the last binary) with 1 and then 16
# concurrent clients writing checks through the leader's API for DURATION each.
#
# usage: sudo sh control/testdata/bench-writes.sh OLD_VIGIL NEW_VIGIL [MORE_VIGIL...] [HELD] [DURATION]
#   go build -o /tmp/vigil-new ./cmd/vigil
#   git worktree add /tmp/vigil-base <base commit> && (cd /tmp/vigil-base && go build -o /tmp/vigil-old ./cmd/vigil)
#   sudo sh control/testdata/bench-writes.sh /tmp/vigil-old /tmp/vigil-new 10000 10s
# Every binary named runs in turn; the last vigil binary generates the load. A number is HELD, a
# number with a unit (10s) is DURATION. A binary named wal:PATH runs its voters with
# -raft-log-store wal (their log in hashicorp/raft-wal, opt-in), bolt:PATH with -raft-log-store
# boltdb (BoltDB's raft.db, the default). The peer,
# named etcd:DIR, runs three etcd members built by build-etcd.sh into DIR, loaded by DIR's
# etcd-load with the same clients, keys and bodies (it holds only the keys the runs write).
set -eu
HELD=10000
DURATION=10s
BINS=""
for a in "$@"; do
	case $a in
	[0-9]*[smh]) DURATION=$a ;;
	*[!0-9]*) BINS="$BINS $a" ;;
	*) HELD=$a ;;
	esac
done
set -- $BINS
[ $# -ge 2 ] || { sed -n 2,18p "$0"; exit 2; }
LOADGEN=""
for SPEC in "$@"; do
	case $SPEC in etcd:*) ;; *) LOADGEN=${SPEC#*:} ;; esac
done
[ -n "$LOADGEN" ] || { echo "name at least one vigil binary" >&2; exit 2; }
NS=config-bench-$$
DIR=$(mktemp -d /tmp/config-bench.XXXXXX)
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

cpu_ticks() { # total user+system clock ticks of the voters
	t=0
	for p in $PIDS; do
		t=$((t + $(cut -d' ' -f14 /proc/"$p"/stat) + $(cut -d' ' -f15 /proc/"$p"/stat)))
	done
	echo $t
}

leader_port() { # the API port of the voter v0 says leads
	l=$(in_ns curl -fsS http://127.0.0.1:7100/v1/cluster 2>/dev/null | sed -n 's/.*"leader": *"v\([0-9]\)".*/\1/p')
	echo 710${l:-0}
}

batches() { # writes and raft entries the leader's group commit has made so far: "sum count"
	in_ns curl -fsS http://127.0.0.1:$LP/metrics 2>/dev/null | awk '
		/^vigil_control_commit_batch_writes_sum/ { s = $2 } /^vigil_control_commit_batch_writes_count/ { c = $2 }
		END { printf "%d %d\n", s, c }'
}

stages() { # PORT: "stage sum count" of each stage of a write on the voter whose API is at PORT
	in_ns curl -fsS http://127.0.0.1:$1/metrics 2>/dev/null | awk '
		/^vigil_control_write_stage_seconds_sum/ { split($1, a, "\""); s[a[2]] = $2 }
		/^vigil_control_write_stage_seconds_count/ { split($1, a, "\""); c[a[2]] = $2 }
		END { for (k in s) printf "%s %s %s\n", k, s[k], c[k] }'
}

stage_means() { # WHO BEFORE AFTER: the mean of each stage over the row, in us, and how many
	printf '%s\n%s\n' "$2" "$3" | awk -v who="$1" '
		NF == 3 { if (!(($1) in s0)) { s0[$1] = $2; c0[$1] = $3 } else { s1[$1] = $2; c1[$1] = $3 } }
		END {
			out = who ":"
			n = split("validate encode queue raft log_store fsm_apply", order, " ")
			for (i = 1; i <= n; i++) { k = order[i]
				if ((k in c1) && c1[k] > c0[k]) out = out sprintf(" %s %.0f us (x%d)", k, (s1[k] - s0[k]) * 1e6 / (c1[k] - c0[k]), c1[k] - c0[k]) }
			print out }'
}

wait_for() { # url pattern
	i=0
	until in_ns curl -fsS "$1" 2>/dev/null | grep -q "$2"; do
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "timed out waiting for $1 to show $2" >&2; exit 1; }
		sleep 0.1
	done
}

disk_sync() { # synced 4 KiB writes in place on the voters' disk, what each log append waits for
	dd if=/dev/zero of="$DIR/sync-probe" bs=4k count=200 2>/dev/null
	sync "$DIR/sync-probe"
	if command -v python3 >/dev/null; then # each write and its fdatasync timed alone: median, p90, mean
		python3 - "$DIR/sync-probe" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
block, t = b"\0" * 4096, []
for i in range(200):
    t0 = time.perf_counter_ns()
    os.pwrite(fd, block, (i % 200) * 4096)
    os.fdatasync(fd)
    t.append((time.perf_counter_ns() - t0) // 1000)
t.sort()
print("synced 4 KiB write in place on the voters' disk (pwrite + fdatasync, 200): median %d us, p90 %d us, mean %d us" % (t[100], t[180], sum(t) // len(t)))
PY
	else
		t0=$(date +%s%N)
		dd if=/dev/zero of="$DIR/sync-probe" bs=4k count=200 conv=notrunc oflag=dsync 2>/dev/null
		echo "synced 4 KiB write in place on the voters' disk: $((($(date +%s%N) - t0) / 200000)) us (mean of 200, dd oflag=dsync)"
	fi
	rm -f "$DIR/sync-probe"
}

echo "machine: $(nproc) cores, $(uname -r); load: $(cut -d' ' -f1-3 /proc/loadavg); held checks: $HELD; $DURATION per run"
disk_sync
run_etcd() { # DIR: three etcd members, the load through the leader
	E=$1
	for i in 0 1 2; do
		ip netns exec "$NS" "$E/etcd-server" --name e$i --data-dir "$DIR/e$i" \
			--listen-peer-urls http://127.0.0.1:238$i --initial-advertise-peer-urls http://127.0.0.1:238$i \
			--listen-client-urls http://127.0.0.1:237$i --advertise-client-urls http://127.0.0.1:237$i \
			--initial-cluster e0=http://127.0.0.1:2380,e1=http://127.0.0.1:2381,e2=http://127.0.0.1:2382 \
			--initial-cluster-state new --log-level warn >"$DIR/e$i.log" 2>&1 &
		PIDS="$PIDS $!"
	done
	leader=""
	i=0
	until [ -n "$leader" ]; do
		for m in 0 1 2; do
			in_ns curl -fsS http://127.0.0.1:237$m/metrics 2>/dev/null | grep -q '^etcd_server_is_leader 1' && leader=$m
		done
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "timed out waiting for an etcd leader" >&2; exit 1; }
		sleep 0.1
	done
	for clients in 1 16; do
		before=$(cpu_ticks)
		out=$(in_ns "$E/etcd-load" -endpoints 127.0.0.1:237$leader -clients $clients -duration "$DURATION" -prefix "c$clients" 2>&1 | head -1 || true)
		ticks=$(($(cpu_ticks) - before))
		writes=$(echo "$out" | sed -n 's/.*: \([0-9]*\) writes in.*/\1/p')
		echo "etcd $("$E/etcd-server" --version | sed -n 's/etcd Version: //p'): $out; members' CPU: $((ticks * 1000 / $(getconf CLK_TCK))) ms, $((ticks * 1000000 / $(getconf CLK_TCK) / (${writes:-0} + 1))) us per write"
	done
}

for SPEC in "$@"; do
	case $SPEC in
	etcd:*)
		for p in $PIDS; do kill "$p" 2>/dev/null || true; done
		for p in $PIDS; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
		PIDS=""
		run_etcd "${SPEC#etcd:}"
		echo "  $(disk_sync)"
		continue
		;;
	esac
	BIN=${SPEC#*:}
	NAME=$(basename "$BIN")
	store=""
	case $SPEC in
	wal:*) NAME="$NAME (write-ahead log)"; store="-raft-log-store wal" ;;
	bolt:*) NAME="$NAME (BoltDB)"; store="-raft-log-store boltdb" ;;
	esac
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
	PIDS=""
	rm -rf "$DIR/v0" "$DIR/v1" "$DIR/v2"
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
	"$LOADGEN" load document -checks "$HELD" >"$DIR/doc.yaml"
	in_ns "$BIN" apply -f "$DIR/doc.yaml" -server http://127.0.0.1:7100 -timeout 120s >/dev/null
	for clients in 1 16; do
		LP=$(leader_port) # the load goes to the leader (an election under load may have moved it)
		FP=710$(((${LP#710} + 1) % 3))
		b0=$(batches)
		l0=$(stages $LP) f0=$(stages $FP)
		before=$(cpu_ticks)
		out=$(in_ns "$LOADGEN" load writes -server http://127.0.0.1:$LP -clients $clients -duration "$DURATION" -prefix "c$clients" 2>&1 | head -1 || true)
		ticks=$(($(cpu_ticks) - before))
		writes=$(echo "$out" | sed -n 's/.*: \([0-9]*\) writes in.*/\1/p')
		b1=$(batches)
		l1=$(stages $LP) f1=$(stages $FP)
		moved=""
		[ "$(leader_port)" = "$LP" ] || moved=" (the leader changed during the row: v${LP#710}, then $(leader_port))"
		enc=$(in_ns curl -fsS http://127.0.0.1:$LP/metrics 2>/dev/null | awk '/^vigil_control_raft_log_binary / { print ($2 == 1 ? "binary" : "json") }')
		echo "$NAME: $out; voters' CPU: $((ticks * 1000 / $(getconf CLK_TCK))) ms, $((ticks * 1000000 / $(getconf CLK_TCK) / (${writes:-0} + 1))) us per write; $(echo "$b0 $b1" | awk '$4 > $2 { printf "%.1f writes per raft entry", ($3 - $1) / ($4 - $2); next } { print "no batch metric" }'); log encoding: ${enc:-json (no metric)}; leader v${LP#710}$moved"
		[ -z "$l1" ] || echo "  stages, mean per observation: $(stage_means leader "$l0" "$l1"); $(stage_means follower "$f0" "$f1")"
	done
	echo "  $(disk_sync)"
done
disk_sync
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
