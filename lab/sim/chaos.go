package sim

// The chaos experiment: a script generated from a seed (Chaos), on the nodes network with a
// control plane of three voters. Its steps are parsed and injected in chaos_steps.go (the
// kills and link faults themselves are package cluster's), its control-plane writes in
// chaoswrite.go, and its part of the report in chaos_report.go.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

// Chaos limits: how long a generated run may last, and the holds between its steps.
const (
	MaxChaosDuration = time.Hour
	chaosMinHold     = time.Second
	chaosMaxHold     = 5 * time.Second
	// ChaosSettle bounds the final wait of a chaos script: everything healed and started
	// again, every location must hold a healthy verdict of every check within it.
	ChaosSettle = 60 * time.Second
)

// chaosState is what a generated script has in force, as the generator tracks it.
type chaosState struct {
	checkerDown  map[string]string // region -> its checker that is down
	locationDown string
	voterDown    bool
	targetDown   map[string]bool
	linksFaulted bool
}

// chaosGen generates a chaos script: its random source, the regions, what is in force and the
// script so far.
type chaosGen struct {
	rng     *rand.Rand
	regions []string
	s       chaosState
	sc      Script
}

// chaosAction is a step the generator may take next, with its weight.
type chaosAction struct {
	weight int
	do     func()
}

// Chaos generates a chaos script from a seed: for about d (the sum of its holds), random
// steps on the nodes network with a control plane of three voters: checkers, locations and
// the control plane's leader killed and started again, targets failed and restored,
// regions cut (both ways and one way), packet loss and latency between two regions, and
// heals; a hold of 1 to 5 s follows each step. At most one checker per region, one
// location and one voter are down at a time. At the end every fault is repaired and the
// script waits until every location matches the fault model (every verdict healthy). The
// same seed, duration and regions give the same script. It is pure.
func Chaos(seed uint64, d time.Duration, regions []string) (Script, error) {
	if d <= 0 || d > MaxChaosDuration {
		return Script{}, fmt.Errorf("sim: chaos: duration %v is not from 1ns to %v", d, MaxChaosDuration)
	}
	if len(regions) < 2 {
		return Script{}, fmt.Errorf("sim: chaos: at least two regions, got %d", len(regions))
	}
	g := &chaosGen{
		rng:     rand.New(rand.NewPCG(seed, 0x5eed_c4a05)),
		regions: slices.Clone(regions),
		s:       chaosState{checkerDown: map[string]string{}, targetDown: map[string]bool{}},
		sc:      Script{Name: fmt.Sprintf("chaos-seed-%d-%v", seed, d), Network: NetworkNodes},
	}
	var elapsed time.Duration
	for elapsed < d && len(g.sc.Steps) < maxSteps-20 {
		g.choose(g.actions())
		hold := chaosMinHold + time.Duration(g.rng.IntN(int((chaosMaxHold-chaosMinHold)/(250*time.Millisecond))+1))*250*time.Millisecond
		hold = min(hold, max(d-elapsed, 250*time.Millisecond))
		g.sc.Steps = append(g.sc.Steps, Step{Kind: StepHold, For: hold})
		elapsed += hold
	}
	// Repair everything, then every location must settle on every verdict healthy.
	g.heal()
	g.add(StepStart, "all")
	for _, r := range sortedKeys(g.s.targetDown) {
		g.add(StepUp, r)
	}
	g.sc.Steps = append(g.sc.Steps, Step{Kind: StepWait, For: ChaosSettle})
	for i := range g.sc.Steps {
		g.sc.Steps[i].Line = i + 2 // after the network line
	}
	return g.sc, nil
}

// add appends a step to the script.
func (g *chaosGen) add(kind string, args ...string) {
	g.sc.Steps = append(g.sc.Steps, Step{Kind: kind, Regions: args})
}

// link adds the step of a link fault.
func (g *chaosGen) link(f regions.Fault) { g.sc.Steps = append(g.sc.Steps, linkStep(f)) }

// heal adds a step that restores every link.
func (g *chaosGen) heal() { g.link(regions.Fault{Kind: regions.Heal}) }

// pick returns one of xs at random.
func (g *chaosGen) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

// twoRegions returns two different regions at random.
func (g *chaosGen) twoRegions() (string, string) {
	a := g.rng.IntN(len(g.regions))
	b := (a + 1 + g.rng.IntN(len(g.regions)-1)) % len(g.regions)
	return g.regions[a], g.regions[b]
}

// choose takes one of acts at random, by weight.
func (g *chaosGen) choose(acts []chaosAction) {
	total := 0
	for _, a := range acts {
		total += a.weight
	}
	x := g.rng.IntN(total)
	for _, a := range acts {
		if x < a.weight {
			a.do()
			return
		}
		x -= a.weight
	}
}

// actions returns the steps the generator may take in the state it is in: the node steps
// (nodeActions), then the target and link faults.
func (g *chaosGen) actions() []chaosAction {
	s, rng := &g.s, g.rng
	acts := g.nodeActions()
	acts = append(acts, chaosAction{2, func() {
		r := g.pick(g.regions)
		if s.targetDown[r] {
			delete(s.targetDown, r)
			g.add(StepUp, r)
			return
		}
		s.targetDown[r] = true
		g.add(StepDown, r)
	}})
	acts = append(acts,
		chaosAction{2, func() {
			s.linksFaulted = true
			if rng.IntN(2) == 0 {
				g.link(regions.Fault{Kind: regions.Cut, A: g.pick(g.regions)})
				return
			}
			a, b := g.twoRegions()
			g.link(regions.Fault{Kind: regions.Cut, A: a, B: b})
		}},
		chaosAction{2, func() {
			s.linksFaulted = true
			a, b := g.twoRegions()
			g.link(regions.Fault{Kind: regions.CutOneWay, A: a, B: b})
		}},
		chaosAction{2, func() {
			s.linksFaulted = true
			a, b := g.twoRegions()
			g.link(regions.Fault{Kind: regions.Loss, A: a, B: b, Loss: float64(5 + 5*rng.IntN(6))}) // 5% to 30%
		}},
		chaosAction{2, func() {
			s.linksFaulted = true
			a, b := g.twoRegions()
			g.link(regions.Fault{Kind: regions.Latency, A: a, B: b, Delay: time.Duration(20+20*rng.IntN(10)) * time.Millisecond})
		}},
	)
	if s.linksFaulted {
		acts = append(acts, chaosAction{4, func() { s.linksFaulted = false; g.heal() }})
	}
	return acts
}

// nodeActions returns the kills and starts the generator may take: a checker of a region
// that has none down is killed, one that is down starts; likewise one location and the
// control plane's leader.
func (g *chaosGen) nodeActions() []chaosAction {
	s, rng := &g.s, g.rng
	var acts []chaosAction
	var up []string
	for _, r := range g.regions {
		if s.checkerDown[r] == "" {
			up = append(up, r)
		}
	}
	if len(up) > 0 {
		acts = append(acts, chaosAction{3, func() {
			r := g.pick(up)
			c := fmt.Sprintf("%s-checker-%d", r, 1+rng.IntN(checkersPerRegion))
			s.checkerDown[r] = c
			g.add(StepKill, c)
		}})
	}
	for _, r := range sortedKeys(s.checkerDown) {
		acts = append(acts, chaosAction{2, func() {
			g.add(StepStart, s.checkerDown[r])
			delete(s.checkerDown, r)
		}})
	}
	if s.locationDown == "" {
		acts = append(acts, chaosAction{2, func() {
			s.locationDown = g.pick(g.regions)
			g.add(StepKill, s.locationDown+"-location")
		}})
	} else {
		acts = append(acts, chaosAction{3, func() {
			g.add(StepStart, s.locationDown+"-location")
			s.locationDown = ""
		}})
	}
	if !s.voterDown {
		acts = append(acts, chaosAction{2, func() { s.voterDown = true; g.add(StepKillLeader) }})
	} else {
		acts = append(acts, chaosAction{3, func() { s.voterDown = false; g.add(StepStart, "voters") }})
	}
	return acts
}

// WriteScript writes sc in the syntax ParseScript reads, so that a run can be replayed with
// `vigil sim -script`.
func WriteScript(w io.Writer, sc Script) error {
	var b strings.Builder
	if sc.Network != "" {
		fmt.Fprintf(&b, "network %s\n", sc.Network)
	}
	for _, st := range sc.Steps {
		fmt.Fprintln(&b, st.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FaultCounts counts the fault and repair steps of sc by kind.
func FaultCounts(sc Script) map[string]int {
	out := map[string]int{}
	for _, st := range sc.Steps {
		if st.Kind != StepHold && st.Kind != StepWait {
			out[st.Kind]++
		}
	}
	return out
}
