package sim

import (
	"fmt"
	"slices"
	"strings"
)

// scenarios returns the named scenarios, as scripts. Each story is told with its script.
func scenarios() map[string]string {
	return map[string]string{
		"partition":       partitionScript,
		"all-down":        allDownScript,
		"cascade":         cascadeScript,
		"checker-offline": checkerOfflineScript,
		"control-down":    controlDownScript,
		// Route 53's shuffle sharding: one endpoint hangs every connection, another floods
		// every response. Their checks turn unhealthy; every other check, sharded over 2 of
		// the 6 checkers of each region, stays on schedule and healthy. The report splits
		// the ordinary probes' lag by the checkers' worker pool and the hostile checks they
		// hold.
		"poison": poisonScript(NetworkPoison),
		// The same poison with sharding off: every checker probes every check, so every
		// checker holds every hostile check.
		"poison-unsharded": poisonScript(NetworkPoisonUnsharded),
		"fleet-growth":     fleetGrowthScript,
	}
}

// The scripts of the named scenarios.
const (
	// Route 53's São Paulo story: sa-east is cut off from the rest. Its location hears only
	// its own checkers, which reach only its own endpoint, and keeps serving it; the other
	// locations hear no checker that reaches São Paulo and stop serving it.
	partitionScript = `
cut sa-east
wait 45s
hold 3s
heal
wait 60s
`

	// Every endpoint fails its health check (a wrong check everywhere, or all down at once):
	// no record is healthy, so every location answers in last resort, never with nothing.
	allDownScript = `
down us-east
down eu-west
down sa-east
wait 30s
hold 3s
up us-east
up eu-west
up sa-east
wait 30s
`

	// One of three endpoints fails, then the other two overload and fail too: the answers go
	// from the two survivors to last resort, never to an empty answer.
	cascadeScript = `
down us-east
wait 30s
down eu-west
hold 1s
down sa-east
wait 30s
hold 3s
up sa-east
up eu-west
up us-east
wait 30s
`

	// One checker loses its own network (its gossip and its probes): the locations stop
	// hearing it and stop counting it once its reports are older than the freshness
	// window (5s); it is never counted as unhealthy, and no verdict changes. Then it comes
	// back.
	checkerOfflineScript = `
network nodes
offline us-east-checker-1
hold 8s
wait 10s
online us-east-checker-1
hold 5s
wait 30s
`

	// The control plane is lost for good, and every data-plane node restarts, one at a
	// time, from the disk copy of its configuration (static stability): answers go on,
	// and the restarted network still decides, failing over when a target goes down.
	controlDownScript = `
network nodes
control-down
hold 2s
restart
wait 30s
down us-east
wait 30s
up us-east
wait 30s
`

	// Kinesis, November 2020: a capacity addition pushed every front-end server past an OS
	// thread limit, because each kept a thread per other server. The checker fleet grows
	// by half at once (6 to 9 checkers per region); per-node goroutines, sockets and heap
	// stay flat, the shards move to the new checkers without a location counting fewer
	// reports than they promise, and no verdict changes.
	fleetGrowthScript = `
network nodes 6
hold 5s
measure
grow 9
hold 3s
measure
wait 30s
`
)

// poisonScript is the poison scenario on network: a baseline, then the hostile endpoints
// hang and flood until their checks are unhealthy everywhere and 10s more, then answer again.
func poisonScript(network string) string {
	return "network " + network + `
hold 5s
poison
wait 30s
hold 10s
cure
wait 30s
`
}

// Scenarios lists the names of the named scenarios.
func Scenarios() []string {
	return sortedKeys(scenarios())
}

// Scenario returns the named scenario's script; regions are the network's regions.
func Scenario(name string, regions []string) (Script, error) {
	text, ok := scenarios()[name]
	if !ok {
		return Script{}, fmt.Errorf("sim: unknown scenario %q (scenarios: %s)", name, strings.Join(Scenarios(), ", "))
	}
	return ParseScript(name, strings.NewReader(text), slices.Clone(regions))
}
