package sim

// What the ddos scenario reads of the node and of the machine: the victim's counters from the
// node's Prometheus registry, and the load average.

import (
	"fmt"
	"os"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/vigil-dns/vigil/agent"
)

// victimCounters reads from the node's metrics the queries the victim's servers dropped for
// their budget and the victim zone's answered queries.
func victimCounters(nd *agent.Node, run *DDoSRun) (drops, answered float64) {
	mfs, err := nd.Gatherer().Gather()
	if err != nil {
		return 0, 0
	}
	listeners := map[string]bool{}
	for _, s := range run.VictimServers {
		listeners[fmt.Sprintf("ns-%d", s)] = true
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "vigil_location_queries_dropped_total":
			for _, m := range mf.GetMetric() {
				if label(m, "reason") == "budget" && listeners[label(m, "listener")] {
					drops += m.GetCounter().GetValue()
				}
			}
		case "vigil_location_queries_total":
			for _, m := range mf.GetMetric() {
				if label(m, "zone") == run.Victim {
					answered += m.GetCounter().GetValue()
				}
			}
		}
	}
	return drops, answered
}

// loadAverage returns the machine's load averages from /proc/loadavg, or "" where there is
// none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
