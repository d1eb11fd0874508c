package verify

import (
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/status"
)

// drainCheck is the health check a location gives a drained record (node.DrainCheck).
const drainCheck = "override:drain"

// withOverrides returns rs as a location with these maintenance overrides in force answers it,
// and sets states accordingly: a forced check takes its forced state, a drained record of rs
// gets a health check that is unhealthy. rs itself is not changed.
func withOverrides(rs *config.RecordSet, states map[string]string, notes []status.OverrideNote) *config.RecordSet {
	out := rs
	for _, n := range notes {
		switch n.Kind {
		case state.OverrideHealthy, state.OverrideUnhealthy:
			states[n.Check] = n.Kind
		case state.OverrideDrain:
			if n.Name != rs.Name || n.Type != string(rs.Type) {
				continue
			}
			for i, r := range out.Records {
				if r.Value != n.Value {
					continue
				}
				if out == rs {
					c := *rs
					c.Records = slices.Clone(rs.Records)
					out = &c
				}
				out.Records[i].HealthCheck = drainCheck
				states[drainCheck] = "unhealthy"
			}
		}
	}
	return out
}
