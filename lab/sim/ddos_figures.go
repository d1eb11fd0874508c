package sim

// The ddos scenario's figures: each layout's run, its probes sorted into groups by overlap
// with the victim, kind of server and phase.

import (
	"fmt"
	"slices"
	"time"
)

// DDoSResult is what the ddos scenario measured: the sharded layout and, when asked, the
// unsharded one under the same flood.
type DDoSResult struct {
	// Config is the configuration the scenario ran with, defaults filled in.
	Config DDoSConfig
	// Sharded is the run with shuffle sharding: Fleet servers, ShardSize per zone, overlap at
	// most 2.
	Sharded *DDoSRun
	// Unsharded is the run with every zone on the same servers, or nil.
	Unsharded *DDoSRun
}

// DDoSRun is one layout's run: the victim, the flood and every group's answers.
type DDoSRun struct {
	// Layout describes the name-server layout.
	Layout string
	// Victim is the flooded zone; VictimServers its name servers, which the flood targets.
	Victim        string
	VictimServers []int
	// Zones is the number of zones.
	Zones int
	// FloodSent is the number of flood queries sent; FloodTook how long sending them took.
	FloodSent int64
	FloodTook time.Duration
	// BudgetDrops is the number of queries the victim's servers dropped for their budget;
	// VictimAnswered the number of the victim zone's queries the location answered (flood and
	// probes).
	BudgetDrops, VictimAnswered float64
	// CPU is the CPU time (user and system) the whole process used while the flood lasted:
	// the flood's senders, the location and the probes together; 0 when unknown.
	CPU time.Duration
	// Load is the machine's load average (1, 5 and 15 minutes) when the flood started, or ""
	// where the system does not tell: other work on the machine takes cores from the run.
	Load string
	// Groups are the probes' figures, by group and phase.
	Groups []DDoSGroup
}

// Phases of a DDoSGroup.
const (
	PhaseBefore = "before"
	PhaseFlood  = "flood"
)

// DDoSGroup is the answers that one group of zones got on one kind of server in one phase.
type DDoSGroup struct {
	// Overlap is how many name servers the group's zones share with the victim; the victim
	// itself has Overlap equal to the shard size and Victim set.
	Overlap int
	Victim  bool
	// Shared says the figures are of queries to servers the victim also has.
	Shared bool
	// Resolver says the figures are of resolutions: a resolver tries the zone's servers in a
	// random order, each for TryTimeout, until one answers; its latency is the whole
	// resolution's.
	Resolver bool
	// Phase is PhaseBefore or PhaseFlood.
	Phase string
	// Zones and Servers are the number of zones and of (zone, server) pairs in the group.
	Zones, Servers int
	// Sent and Answered count the probes; latencies are of the answered ones.
	Sent, Answered     int
	P50, P99, Max      time.Duration
	latencies          []time.Duration
	zoneSet, serverSet map[string]bool
}

// AnsweredShare returns the share of the group's probes that were answered, 0 to 1.
func (g *DDoSGroup) AnsweredShare() float64 {
	if g.Sent == 0 {
		return 0
	}
	return float64(g.Answered) / float64(g.Sent)
}

// Name returns a short description of the group, e.g. "shares 1, unshared servers".
func (g *DDoSGroup) Name() string {
	kind := "unshared servers"
	switch {
	case g.Resolver:
		kind = "resolver"
	case g.Shared:
		kind = "shared servers"
	}
	if g.Victim {
		return "victim zone, " + kind
	}
	return fmt.Sprintf("shares %d, %s", g.Overlap, kind)
}

// Group returns the group of the run with the given overlap, kind and phase, or nil.
func (r *DDoSRun) Group(victim bool, overlap int, shared, resolver bool, phase string) *DDoSGroup {
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Victim == victim && g.Overlap == overlap && g.Shared == shared && g.Resolver == resolver && g.Phase == phase {
			return g
		}
	}
	return nil
}

// groupSamples sorts the samples into groups by overlap, shared server and phase; a probe
// belongs to the phase it was sent in.
func groupSamples(targets []ddosTarget, samples [][]ddosSample, floodAt, end time.Time) []DDoSGroup {
	var groups []DDoSGroup
	find := func(t ddosTarget, phase string) *DDoSGroup {
		for i := range groups {
			g := &groups[i]
			if g.Victim == t.victim && g.Overlap == t.overlap && g.Shared == t.shared && g.Resolver == t.resolver && g.Phase == phase {
				return g
			}
		}
		groups = append(groups, DDoSGroup{Victim: t.victim, Overlap: t.overlap, Shared: t.shared, Resolver: t.resolver, Phase: phase,
			zoneSet: map[string]bool{}, serverSet: map[string]bool{}})
		return &groups[len(groups)-1]
	}
	for i, t := range targets {
		for _, s := range samples[i] {
			phase := PhaseBefore
			if !s.sent.Before(floodAt) {
				phase = PhaseFlood
			}
			if !s.sent.Before(end) {
				continue
			}
			g := find(t, phase)
			g.zoneSet[ddosZone(t.zone)] = true
			g.serverSet[t.addr+"/"+ddosZone(t.zone)] = true
			g.Sent++
			if s.answered {
				g.Answered++
				g.latencies = append(g.latencies, s.took)
			}
		}
	}
	for i := range groups {
		g := &groups[i]
		g.Zones, g.Servers = len(g.zoneSet), len(g.serverSet)
		slices.Sort(g.latencies)
		if n := len(g.latencies); n > 0 {
			g.P50, g.P99, g.Max = g.latencies[(n-1)/2], g.latencies[(n*99+99)/100-1], g.latencies[n-1]
		}
	}
	slices.SortFunc(groups, func(a, b DDoSGroup) int {
		key := func(g DDoSGroup) int {
			k := g.Overlap * 8
			if g.Victim {
				k = 1000
			}
			switch {
			case g.Shared:
				k += 2
			case g.Resolver:
				k += 4
			}
			if g.Phase == PhaseFlood {
				k++
			}
			return k
		}
		return key(a) - key(b)
	})
	return groups
}
