#!/bin/sh
# Faults of the compose demo, as `vigil dev target|cut|heal|faults` drives them in `vigil dev`:
#   deploy/compose/fault.sh [-p project] target <region> down|up
#   deploy/compose/fault.sh [-p project] cut <region>
#   deploy/compose/fault.sh [-p project] heal
#   deploy/compose/fault.sh [-p project] faults
# "target down" flips the demo target's health endpoint (POST /down on its published port);
# "cut" is a real `docker network disconnect` of the region's containers from the demo
# network. The demo has one network, so a cut region's nodes lose one another too, and a cut
# between two regions only (which `vigil dev cut a b` simulates) has no compose equivalent.
# Run from the repository root; the project defaults to its directory name, as compose does.
set -eu
project=$(basename "$PWD" | tr -cd 'a-z0-9_-')
if [ "${1:-}" = "-p" ]; then project=$2; shift 2; fi
network="${project}_vigil"
port() {
  case $1 in
    us-east) echo "${VIGIL_TARGET_US_EAST:-7811}" ;;
    eu-west) echo "${VIGIL_TARGET_EU_WEST:-7812}" ;;
    sa-east) echo "${VIGIL_TARGET_SA_EAST:-7813}" ;;
    *) echo "fault.sh: unknown region $1 (us-east, eu-west, sa-east)" >&2; exit 2 ;;
  esac
}
containers() { docker ps -q --filter "label=com.docker.compose.project=$project" "$@"; }
usage() { sed -n '2,6p' "$0" >&2; exit 2; }
case "${1:-}" in
  target)
    [ $# -eq 3 ] || usage
    case $3 in down|up) ;; *) usage ;; esac
    p=$(port "$2")
    curl -fsS -X POST "http://127.0.0.1:$p/$3" ;;
  cut)
    [ $# -eq 2 ] || usage
    port "$2" >/dev/null
    for s in "location-$2" "checker-$2-1" "checker-$2-2" "target-$2"; do
      for c in $(containers --filter "label=com.docker.compose.service=$s"); do
        docker network disconnect "$network" "$c" && echo "cut: $s"
      done
    done ;;
  heal)
    for c in $(containers); do
      if ! docker inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}' "$c" | grep -qw "$network"; then
        docker network connect "$network" "$c" && echo "healed: $(docker inspect -f '{{index .Config.Labels "com.docker.compose.service"}}' "$c")"
      fi
    done ;;
  faults)
    for r in us-east eu-west sa-east; do
      curl -fsS -o /dev/null "http://127.0.0.1:$(port $r)/healthz" 2>/dev/null || echo "target $r is down"
    done
    for c in $(containers); do
      if ! docker inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}' "$c" | grep -qw "$network"; then
        echo "$(docker inspect -f '{{index .Config.Labels "com.docker.compose.service"}}' "$c") is cut off"
      fi
    done ;;
  *) usage ;;
esac
