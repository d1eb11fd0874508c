package sim

import (
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/quorum"
)

// Faults are the faults in force during a scenario.
type Faults struct {
	// Down holds the regions whose target fails its health check.
	Down map[string]bool
	// Cut holds the cut links, each as its two regions in sorted order.
	Cut map[[2]string]bool
}

// NewFaults returns no faults.
func NewFaults() Faults {
	return Faults{Down: map[string]bool{}, Cut: map[[2]string]bool{}}
}

// link returns the key of the link between a and b.
func link(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Apply changes f by a fault step; regions lists every region (for a one-region cut).
func (f Faults) Apply(st Step, regions []string) {
	switch st.Kind {
	case StepDown:
		f.Down[st.Regions[0]] = true
	case StepUp:
		delete(f.Down, st.Regions[0])
	case StepCut:
		if len(st.Regions) == 2 {
			f.Cut[link(st.Regions[0], st.Regions[1])] = true
			return
		}
		for _, r := range regions {
			if r != st.Regions[0] {
				f.Cut[link(r, st.Regions[0])] = true
			}
		}
	case StepHeal:
		clear(f.Cut)
	case StepPoison:
		f.Down[hostileTarget] = true
	case StepCure:
		delete(f.Down, hostileTarget)
	}
}

// linked reports whether regions a and b talk directly.
func (f Faults) linked(a, b string) bool { return a == b || !f.Cut[link(a, b)] }

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
