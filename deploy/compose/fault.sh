#!/bin/sh
# Faults of the compose demo. Run it from the repository root (or pass -p PROJECT):
#   fault.sh cut REGION               cut REGION off from every other region, both ways
#   fault.sh cut A B                  cut the link between A and B only, both ways
#   fault.sh cut-oneway FROM TO       drop what FROM sends to TO; TO to FROM still flows
#   fault.sh latency A B DURATION     one-way latency of the link A-B, each way (0: the default)
#   fault.sh loss A B PERCENT         drop PERCENT of the packets on the link A-B, each way
#   fault.sh heal                     remove every link fault (targets and nodes stay as they are)
#   fault.sh list                     every link, each way, with its latency and faults
#   fault.sh target REGION down|up    fail or recover the demo target's health endpoint
#   fault.sh target REGION stop|start stop or start the demo target's container
#   fault.sh kill NODE                SIGKILL a node's container (control-1, location-sa-east, ...)
#   fault.sh restart NODE             start a killed node again (from its data volume)
# Regions: us-east, eu-west, sa-east. Link faults go to every region's router (`vigil router
# ctl`, through docker exec): each drops or delays what it sends. The host reaches every
# region over that region's own network, so the published ports answer during any fault.
set -eu
project=${COMPOSE_PROJECT_NAME:-$(basename "$PWD" | tr 'A-Z' 'a-z' | tr -cd 'a-z0-9_-')}
if [ "${1:-}" = "-p" ]; then project=$2; shift 2; fi
regions="us-east eu-west sa-east"
usage() { sed -n '2,13p' "$0" >&2; exit 2; }
die() { echo "fault.sh: $*" >&2; exit 1; }
container() {
  c=$(docker ps -aq --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service=$1")
  [ -n "$c" ] || die "no container of service $1 in compose project $project (is the demo up? make demo)"
  echo "$c"
}
region() {
  case " $regions " in *" $1 "*) ;; *) die "unknown region $1 ($regions)" ;; esac
}
target_port() { # the host port the demo target of region $1 is published on
  case $1 in
    us-east) echo "${VIGIL_TARGET_US_EAST:-7811}" ;;
    eu-west) echo "${VIGIL_TARGET_EU_WEST:-7812}" ;;
    sa-east) echo "${VIGIL_TARGET_SA_EAST:-7813}" ;;
  esac
}
ctl() { # ctl REGION COMMAND...: one router's answer
  r=$1; shift
  c=$(container "router-$r")
  docker exec "$c" /vigil router ctl "$@"
}
list() { for r in $regions; do ctl "$r" links; done; }
case "${1:-}" in
  cut|cut-oneway|latency|loss|heal)
    for r in $regions; do ctl "$r" "$@" >/dev/null; done
    list ;;
  list)
    [ $# -eq 1 ] || usage
    list ;;
  target)
    [ $# -eq 3 ] || usage
    region "$2"
    case $3 in
      down|up) curl -fsS -X POST "http://127.0.0.1:$(target_port "$2")/$3" ;;
      stop) c=$(container "target-$2"); docker stop -t 1 "$c" >/dev/null && echo "target-$2 stopped" ;;
      start) c=$(container "target-$2"); docker start "$c" >/dev/null && echo "target-$2 started" ;;
      *) usage ;;
    esac ;;
  kill)
    [ $# -eq 2 ] || usage
    case $2 in router-*) die "$2 holds its region's network: kill a node (control-N, location-R, checker-R-N)" ;; esac
    c=$(container "$2")
    docker kill "$c" >/dev/null && echo "$2 killed" ;;
  restart)
    [ $# -eq 2 ] || usage
    c=$(container "$2")
    docker start "$c" >/dev/null && echo "$2 started" ;;
  *) usage ;;
esac
