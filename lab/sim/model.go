package sim

import (
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/regions"
)

// Faults are the faults in force during a scenario.
type Faults struct {
	// Down holds the regions whose target fails its health check.
	Down map[string]bool
	// Links holds the cut links (the model knows no other link fault: see Step.unmodelled).
	Links *regions.Faults
}

// NewFaults returns no faults between regions.
func NewFaults(rs []string) Faults {
	return Faults{Down: map[string]bool{}, Links: regions.NewFaults(rs...)}
}

// Apply changes f by a fault step.
func (f Faults) Apply(st Step) {
	switch st.Kind {
	case StepDown:
		f.Down[st.Regions[0]] = true
	case StepUp:
		delete(f.Down, st.Regions[0])
	case StepCut, StepHeal:
		_ = f.Links.Apply(st.Fault) // the script's parser checked it
	case StepPoison:
		f.Down[hostileTarget] = true
	case StepCure:
		delete(f.Down, hostileTarget)
	}
}

// linked reports whether regions a and b talk directly.
func (f Faults) linked(a, b string) bool {
	return a == b || f.Links.Carries(a, b) && f.Links.Carries(b, a)
}

// heard returns the regions whose checkers' reports reach a location in region l: gossip
// relays, so it is l's connected component of the links in force.
func (f Faults) heard(l string, regions []string) []string {
	seen := []string{l}
	for i := 0; i < len(seen); i++ {
		for _, r := range regions {
			if !slices.Contains(seen, r) && f.linked(seen[i], r) {
				seen = append(seen, r)
			}
		}
	}
	return seen
}

// Expect is the fault model: the verdict each location should reach for each check once the
// network has settled under f. targets maps a check to the region of the target it probes.
//
// A location hears the checkers of its connected component; a check is healthy there when
// its target is up and at least one heard region's checkers reach it (one region of three
// is more than the 18% threshold). A calculated check is healthy when at least min_healthy
// of its children are. Checks of a target the model does not know are left out.
func Expect(doc *config.Document, regions []string, targets map[string]string, f Faults) map[string]map[string]quorum.State {
	out := make(map[string]map[string]quorum.State, len(regions))
	for _, l := range regions {
		heard := f.heard(l, regions)
		states := map[string]quorum.State{}
		for _, c := range doc.Checks {
			t, ok := targets[c.ID]
			if !ok || c.Protocol == config.ProtocolCalculated {
				continue
			}
			states[c.ID] = quorum.StateUnhealthy
			if f.Down[t] {
				continue
			}
			for _, h := range heard {
				if f.linked(h, t) {
					states[c.ID] = quorum.StateHealthy
				}
			}
		}
		for _, c := range doc.Checks {
			if c.Protocol != config.ProtocolCalculated {
				continue
			}
			n, known := 0, true
			for _, ch := range c.Children {
				s, ok := states[ch]
				known = known && ok
				if s == quorum.StateHealthy {
					n++
				}
			}
			if !known || c.Inverted || c.Disabled {
				continue
			}
			states[c.ID] = quorum.StateUnhealthy
			if n >= c.MinHealthy {
				states[c.ID] = quorum.StateHealthy
			}
		}
		out[l] = states
	}
	return out
}
