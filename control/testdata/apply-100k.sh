#!/bin/sh
# A configuration of CHECKS http checks (each with a multivalue A record set it decides;
# interval 300 s) applied with `vigil apply` to real `vigil agent` processes on this machine,
# in a private network namespace: 1 voter, 3 regions x 2 checkers, 3 locations, one local
# target. It prints how long the apply took, when every node ran the new configuration,
# whether each location answers sample names, then each node's resident memory and CPU over
# WINDOW after the apply settled. Last, a check at 1 s (failure threshold 3) is added among
# them, deciding one of the two records of a multivalue record set, and its target goes down:
# it prints how long each location takes to leave that record out of its answer (issue 15:
# within 5 s).
#
# usage: sudo sh control/testdata/apply-100k.sh VIGIL [CHECKS] [WINDOW_SECONDS]
#   go build -o /tmp/vigil ./cmd/vigil && sudo sh control/testdata/apply-100k.sh /tmp/vigil 100000 60
set -eu
[ $# -ge 1 ] || { sed -n 2,10p "$0"; exit 2; }
BIN=$1
CHECKS=${2:-100000}
WINDOW=${3:-60}
NS=config-apply-$$
DIR=$(mktemp -d /tmp/config-apply.XXXXXX)
PIDS=""
NODES=""
# alive PID: the process runs (a zombie, killed and not yet reaped, does not count).
alive() { case $(ps -o stat= -p "$1" 2>/dev/null) in *Z* | "") return 1 ;; esac; }
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	# An agent gets 10 s to stop; then it is killed (seen at 100,000 checks: checkers that
	# did not stop on SIGTERM).
	i=0
	for p in $PIDS; do
		while alive "$p" && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
		alive "$p" && kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM # and so through cleanup; the script does not go on
ip netns add "$NS"
ip -n "$NS" link set lo up
echo scale-token >"$DIR/token"
export VIGIL_TOKEN=scale-token
now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{printf "%.1f", $1 - $2}'; }

# run NAME ARGS...: start a process in the namespace, remember its pid under NAME.
run() {
	name=$1
	shift
	ip netns exec "$NS" "$@" >"$DIR/$name.log" 2>&1 &
	PIDS="$PIDS $!"
	echo "$!" >"$DIR/$name.pid"
}

run target "$BIN" target -listen 127.0.0.1:8080
run fast-target "$BIN" target -listen 127.0.0.1:8081
run voter "$BIN" agent -roles control -id voter -data-dir "$DIR/voter" -raft-addr 127.0.0.1:7000 \
	-api-addr 127.0.0.1:7100 -bootstrap -token-file "$DIR/token" -open-reads -http off -log-level warn
i=0
until ip netns exec "$NS" curl -fsS http://127.0.0.1:7100/v1/cluster 2>/dev/null | grep -q '"leader": "voter"'; do
	i=$((i + 1)); [ $i -lt 300 ] || { echo "no leader" >&2; exit 1; }; sleep 0.1
done
port=0
common="-control http://127.0.0.1:7100 -insecure-gossip -log-level warn"
for r in us-east eu-west sa-east; do
	port=$((port + 1))
	seed=""
	[ $port -eq 1 ] || seed="-join 127.0.0.1:7901"
	run "loc-$r" "$BIN" agent -roles location -id "loc-$r" -region "$r" -data-dir "$DIR/loc-$r" \
		-gossip-bind 127.0.0.1:790$port -dns 127.0.0.1:530$port -http 127.0.0.1:770$port $common $seed
	NODES="$NODES loc-$r:770$port"
	for c in 1 2; do
		port2=$((port * 10 + c))
		run "chk-$r-$c" "$BIN" agent -roles checker -id "chk-$r-$c" -region "$r" -data-dir "$DIR/chk-$r-$c" \
			-gossip-bind 127.0.0.1:79$port2 -http 127.0.0.1:77$port2 -allow-loopback-probes $common -join 127.0.0.1:7901
		NODES="$NODES chk-$r-$c:77$port2"
	done
done
sleep 3

"$BIN" load document -checks "$CHECKS" -protocol http -target 127.0.0.1:8080 -path /healthz -interval 300s >"$DIR/doc.yaml"
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); document: $CHECKS checks and record sets, $(wc -c <"$DIR/doc.yaml") bytes of YAML"
start=$(now)
ip netns exec "$NS" "$BIN" apply -f "$DIR/doc.yaml" -server http://127.0.0.1:7100 -timeout 300s | tee "$DIR/apply.out"
echo "vigil apply returned after $(since "$start") s"
index=$(sed -n 's/.*applied at index \([0-9]*\).*/\1/p' "$DIR/apply.out")

# Every node runs the configuration (its vigil_node_config_index reaches the apply's).
for n in $NODES; do
	name=${n%%:*}
	port=${n##*:}
	i=0
	until [ "$(ip netns exec "$NS" curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | sed -n 's/^vigil_node_config_index \([0-9e.+]*\)$/\1/p' | awk '{printf "%d", $1}')" -ge "$index" ] 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 3000 ] || { echo "$name never ran index $index" >&2; exit 1; }; sleep 0.1
	done
	echo "$name runs index $index $(since "$start") s after the apply began"
done

# Sample names at every location: the first, middle and last record sets.
last=$((CHECKS - 1))
mid=$((CHECKS / 2))
for port in 5301 5302 5303; do
	for h in 0 $mid $last; do
		name="h$h.z$((h / 1000)).scale.test."
		i=0
		until ip netns exec "$NS" dig +short +time=1 +tries=1 -p $port @127.0.0.1 "$name" A | grep -q '^192\.'; do
			i=$((i + 1)); [ $i -lt 600 ] || { echo "location :$port does not answer $name" >&2; exit 1; }; sleep 0.1
		done
	done
	echo "location :$port answers h0, h$mid, h$last $(since "$start") s after the apply began"
done

# Steady state: resident memory and CPU of each node over WINDOW seconds.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# gossip bytes sent by a data-plane node (its port in $NODES), from its metrics.
sent() { ip netns exec "$NS" curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | awk '/^vigil_gossip_sent_bytes_total/ {s += $2} END {printf "%d", s}'; }
port_of() { for n in $NODES; do [ "${n%%:*}" != "$1" ] || echo "${n##*:}"; done; }
for name in voter $(for n in $NODES; do echo "${n%%:*}"; done); do
	v=$(echo "$name" | tr '-' '_')
	eval "t0_$v=$(ticks "$(cat "$DIR/$name.pid")")"
	p=$(port_of "$name")
	[ -z "$p" ] || eval "b0_$v=$(sent "$p")"
done
echo "steady window of ${WINDOW} s begins (load $(cut -d' ' -f1-3 /proc/loadavg))"
sleep "$WINDOW"
echo "over ${WINDOW} s after the apply (load $(cut -d' ' -f1-3 /proc/loadavg)):"
for name in voter $(for n in $NODES; do echo "${n%%:*}"; done); do
	pid=$(cat "$DIR/$name.pid")
	v=$(echo "$name" | tr '-' '_')
	eval "t0=\$t0_$v"
	cpu=$(( ($(ticks "$pid") - t0) * 1000 / hz ))
	rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
	hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
	threads=$(awk '/^Threads/ {print $2}' "/proc/$pid/status")
	sockets=$(ls -l "/proc/$pid/fd" 2>/dev/null | grep -c 'socket:' || true)
	p=$(port_of "$name")
	bytes=""
	if [ -n "$p" ]; then
		eval "b0=\$b0_$v"
		bytes=", gossip sent $(( ($(sent "$p") - b0) / WINDOW )) B/s"
	fi
	echo "  $name: resident $((rss / 1024)) MiB (peak $((hwm / 1024)) MiB), CPU $cpu ms ($(echo "$cpu $WINDOW" | awk '{printf "%.1f", $1 / $2 / 10}')% of a core), $threads threads, $sockets sockets$bytes"
done

# A check at 1 s among the others: fast.z0.scale.test. answers 192.0.2.250 (decided by the
# check "fast", whose target is 127.0.0.1:8081) and 192.0.2.251 (decided by c0). Its target
# goes down; every location must leave 192.0.2.250 out within 5 s.
api() { # METHOD PATH BODY
	ip netns exec "$NS" curl -fsS -X "$1" -H "Authorization: Bearer scale-token" -H "Content-Type: application/json" \
		--data "$3" "http://127.0.0.1:7100$2" >/dev/null
}
api PUT /v1/checks/fast '{"protocol": "http", "target": {"host": "127.0.0.1", "port": 8081}, "path": "/healthz",
	"interval": "1s", "timeout": "500ms", "failure_threshold": 3, "checkers_per_region": 2,
	"regions": ["us-east", "eu-west", "sa-east"]}'
api PUT /v1/zones/z0.scale.test/record_sets/fast/A '{"policy": "multivalue", "records": [
	{"value": "192.0.2.250", "health_check": "fast"}, {"value": "192.0.2.251", "health_check": "c0"}]}'
answer() { ip netns exec "$NS" dig +short +time=1 +tries=1 -p "$1" @127.0.0.1 fast.z0.scale.test. A | sort | tr '\n' ' '; }
for port in 5301 5302 5303; do
	i=0
	until [ "$(answer $port)" = "192.0.2.250 192.0.2.251 " ]; do
		i=$((i + 1)); [ $i -lt 600 ] || { echo "location :$port does not answer fast.z0 with both records" >&2; exit 1; }; sleep 0.1
	done
done
# evidence: what each node says of the 1 s check, for whoever reads a failed run.
evidence() {
	for n in $NODES; do
		echo "--- ${n%%:*}" >&2
		ip netns exec "$NS" curl -fsS -m 5 "http://127.0.0.1:${n##*:}/metrics" 2>/dev/null |
			grep -E '^vigil_(node_config_index|checker_checks_assigned|gossip_rows|location_checks)' >&2 || true
		ip netns exec "$NS" curl -fsS -m 5 "http://127.0.0.1:${n##*:}/v1/verdicts/fast" 2>/dev/null | head -c 3000 >&2 || true
		ip netns exec "$NS" curl -fsS -m 5 "http://127.0.0.1:${n##*:}/v1/probes" 2>/dev/null | grep -c '"fast"' >&2 || true
	done
	# A goroutine dump of the first checker (SIGQUIT), kept with its log.
	kill -QUIT "$(cat "$DIR/chk-us-east-1.pid")" 2>/dev/null && sleep 2
	cp "$DIR/chk-us-east-1.log" "${EVIDENCE:-/tmp}/apply-chk-us-east-1.log" 2>/dev/null &&
		echo "goroutine dump of chk-us-east-1: ${EVIDENCE:-/tmp}/apply-chk-us-east-1.log" >&2 || true
}
# Every location holds a healthy verdict of it (not merely none, which DNS serves as healthy).
added=$(now)
for loc in loc-us-east:7701 loc-eu-west:7702 loc-sa-east:7703; do
	i=0
	until ip netns exec "$NS" curl -fsS -m 2 "http://127.0.0.1:${loc##*:}/v1/verdicts/fast" 2>/dev/null | tr -d ' \n' | grep -q '"state":"healthy"'; do
		i=$((i + 1)); [ $i -lt 1200 ] || { echo "${loc%%:*} never decided the 1 s check healthy" >&2; evidence; exit 1; }; sleep 0.1
	done
	echo "${loc%%:*} holds a healthy verdict of the 1 s check $(since "$added") s after it was written"
done
echo "the 1 s check answers at every location; its target goes down (load $(cut -d' ' -f1-3 /proc/loadavg))"
down=$(now)
ip netns exec "$NS" curl -fsS -X POST http://127.0.0.1:8081/down >/dev/null
pending="5301 5302 5303"
while [ -n "$pending" ]; do
	left=""
	for port in $pending; do
		if [ "$(answer $port)" = "192.0.2.251 " ]; then
			echo "  location :$port answers without the down target $(since "$down") s after it went down"
		else
			left="$left $port"
		fi
	done
	pending=$left
	if [ "$(since "$down" | cut -d. -f1)" -ge 60 ]; then
		echo "locations$pending still answer the down target after 60 s" >&2
		for loc in 7701 7702 7703; do ip netns exec "$NS" curl -fsS "http://127.0.0.1:$loc/v1/verdicts/fast" >&2 || true; done
		exit 1
	fi
done
