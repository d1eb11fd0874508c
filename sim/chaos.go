package sim

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
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

// chaosNetwork is what the chaos steps need of a network: the nodes network has it.
type chaosNetwork interface {
	Kill(id string) error
	Start(id string) error
	KillLeader() (string, error)
	CutOneWay(from, to string) error
	SetLoss(a, b string, p float64) error
	SetLatency(a, b string, d time.Duration) error
}

// nodeRegion reads a node name of the nodes network: voter-1 to voter-3 (no region),
// <region>-location or <region>-checker-N (N from 1 to the checkers per region).
func nodeRegion(name string) (region string, ok bool) {
	if v, found := strings.CutPrefix(name, "voter-"); found {
		i, err := strconv.Atoi(v)
		return "", err == nil && i >= 1 && i <= chaosVoters && v == strconv.Itoa(i)
	}
	if r, found := strings.CutSuffix(name, "-location"); found {
		return r, r != ""
	}
	r, c, found := strings.Cut(name, "-checker-")
	i, err := strconv.Atoi(c)
	return r, found && r != "" && err == nil && i >= 1 && i <= checkersPerRegion && c == strconv.Itoa(i)
}

// parseChaosStep parses the arguments of a chaos step.
func parseChaosStep(st Step, args []string, regions []string) (Step, error) {
	want := map[string]int{StepKill: 1, StepStart: 1, StepKillLeader: 0, StepCutOneWay: 2, StepLoss: 3, StepLatency: 3}[st.Kind]
	if st.Kind == StepLatency && len(args) == 4 {
		want = 4 // a jitter
	}
	if len(args) != want {
		return st, fmt.Errorf("%s takes %d arguments, got %d", st.Kind, want, len(args))
	}
	twoRegions := func() error {
		for _, r := range args[:2] {
			if !slices.Contains(regions, r) {
				return fmt.Errorf("%s: unknown region %q (regions: %s)", st.Kind, r, strings.Join(regions, ", "))
			}
		}
		if args[0] == args[1] {
			return fmt.Errorf("%s: two different regions, got %s twice", st.Kind, args[0])
		}
		return nil
	}
	switch st.Kind {
	case StepKill, StepStart:
		r, ok := nodeRegion(args[0])
		switch {
		case st.Kind == StepStart && (args[0] == "all" || args[0] == "voters"):
		case !ok && st.Kind == StepStart:
			return st, fmt.Errorf("start: %q is not a node (voter-1..3, <region>-location, <region>-checker-1..3), voters or all", args[0])
		case !ok:
			return st, fmt.Errorf("kill: %q is not a node (voter-1..3, <region>-location, <region>-checker-1..3)", args[0])
		case r != "" && !slices.Contains(regions, r):
			return st, fmt.Errorf("%s: %q is in no region of %s", st.Kind, args[0], strings.Join(regions, ", "))
		}
		st.Regions = args
	case StepCutOneWay:
		if err := twoRegions(); err != nil {
			return st, err
		}
		st.Regions = args
	case StepLoss:
		if err := twoRegions(); err != nil {
			return st, err
		}
		p, err := strconv.ParseFloat(args[2], 64)
		if err != nil || !(p >= 0 && p <= 100) {
			return st, fmt.Errorf("loss: %q is not a percentage from 0 to 100", args[2])
		}
		st.Regions = args
	case StepLatency:
		if err := twoRegions(); err != nil {
			return st, err
		}
		d, err := time.ParseDuration(args[2])
		if err != nil || d <= 0 || d > 10*time.Second {
			return st, fmt.Errorf("latency: %q is not a duration from 1ns to 10s", args[2])
		}
		st.Regions, st.For = args[:2], d
		if len(args) == 4 {
			j, err := time.ParseDuration(args[3])
			if err != nil || j < 0 || j > d {
				return st, fmt.Errorf("latency: jitter %q is not a duration from 0 to the latency (%v)", args[3], d)
			}
			st.Jitter = j
		}
	}
	return st, nil
}

// chaosFault reports whether the step is a chaos step that injects a fault.
func (s Step) chaosFault() bool {
	switch s.Kind {
	case StepKill, StepKillLeader, StepCutOneWay, StepLoss, StepLatency:
		return true
	}
	return false
}

// unmodelled reports whether the fault model cannot say what the step does to verdicts: a
// one-way cut, packet loss and latency (the model knows cut links and failed targets; a
// killed checker or voter changes no verdict while the others of its region run, and a
// restarted location is judged as a restart).
func (s Step) unmodelled() bool {
	return s.Kind == StepCutOneWay || s.Kind == StepLoss || s.Kind == StepLatency
}

// injectChaos makes a chaos step happen on the network.
func (r *runner) injectChaos(st Step) error {
	cn, ok := r.net.(chaosNetwork)
	if !ok {
		return fmt.Errorf("%s needs the nodes network (first step: network nodes)", st.Kind)
	}
	if st.unmodelled() {
		r.unmodelled = true
	}
	start := time.Now()
	switch st.Kind {
	case StepKill:
		err := cn.Kill(st.Regions[0])
		if err == nil {
			r.event(fmt.Sprintf("%s stopped in %v", st.Regions[0], time.Since(start).Round(time.Millisecond)))
		}
		return err
	case StepStart:
		return cn.Start(st.Regions[0])
	case StepKillLeader:
		id, err := cn.KillLeader()
		if err == nil {
			r.event(fmt.Sprintf("the leader, %s, stopped in %v", id, time.Since(start).Round(time.Millisecond)))
		}
		return err
	case StepCutOneWay:
		return cn.CutOneWay(st.Regions[0], st.Regions[1])
	case StepLoss:
		p, err := strconv.ParseFloat(st.Regions[2], 64)
		if err != nil {
			return fmt.Errorf("loss: %w", err)
		}
		return cn.SetLoss(st.Regions[0], st.Regions[1], p/100)
	case StepLatency:
		if st.Jitter > 0 {
			return errors.New("latency: a jitter needs a real network (vigil sim -real)")
		}
		return cn.SetLatency(st.Regions[0], st.Regions[1], st.For)
	}
	return fmt.Errorf("unknown step %q", st.Kind)
}

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
	g.add(StepHeal)
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
				g.add(StepCut, g.pick(g.regions))
				return
			}
			a, b := g.twoRegions()
			g.add(StepCut, a, b)
		}},
		chaosAction{2, func() { s.linksFaulted = true; a, b := g.twoRegions(); g.add(StepCutOneWay, a, b) }},
		chaosAction{2, func() {
			s.linksFaulted = true
			a, b := g.twoRegions()
			g.add(StepLoss, a, b, strconv.Itoa(5+5*rng.IntN(6))) // 5% to 30%
		}},
		chaosAction{2, func() {
			s.linksFaulted = true
			a, b := g.twoRegions()
			g.sc.Steps = append(g.sc.Steps, Step{Kind: StepLatency, Regions: []string{a, b}, For: time.Duration(20+20*rng.IntN(10)) * time.Millisecond})
		}},
	)
	if s.linksFaulted {
		acts = append(acts, chaosAction{4, func() { s.linksFaulted = false; g.add(StepHeal) }})
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

// VerdictChanges counts the verdict changes after the network was ready, and those to
// unhealthy.
func (r Result) VerdictChanges() (all, unhealthy int) {
	for _, c := range r.History.Changes {
		if !r.ReadyAt.IsZero() && c.At.After(r.ReadyAt) {
			all++
			if !c.Serving {
				unhealthy++
			}
		}
	}
	return all, unhealthy
}

// writeChaos adds the verdict changes and the control-plane writes of a run to a report.
func (r Result) writeChaos(b *strings.Builder) {
	if !r.ReadyAt.IsZero() {
		fmt.Fprintf(b, "  ready at               %s (the timeline's +0)\n", r.ReadyAt.Format("15:04:05.000"))
	}
	all, bad := r.VerdictChanges()
	fmt.Fprintf(b, "  verdict changes        %d after ready (%d to a verdict not served)\n", all, bad)
	if w := r.Writes; w != nil {
		fmt.Fprintf(b, "  control writes         %d attempted, %d acknowledged, %d failed (may or may not have applied), %d skipped (key not checked yet)\n",
			w.Attempted, w.Acknowledged, w.Failed, w.Skipped)
		fmt.Fprintf(b, "  acknowledged checked   %d of %d, lost %d (overwritten by a late failed write %d, read behind an acknowledged index %d, unchecked %d)\n",
			w.Checked, w.Acknowledged, w.Lost, w.Overwritten, w.StaleReads, w.Unchecked)
		if w.ReadBack != "" {
			fmt.Fprintf(b, "  last read back failed  %s\n", w.ReadBack)
		}
		for _, p := range w.Problems {
			fmt.Fprintf(b, "  WRITE %s\n", p)
		}
		r.writeEvidence(b)
	}
}

// evidenceViolations bounds the violations whose neighbourhood a chaos report prints.
const evidenceViolations = 3

// writeEvidence prints, for the first violations, what the same location answered within a
// second of the violation and its verdict changes within ten seconds, to tell the system's
// fault from the model's.
func (r Result) writeEvidence(b *strings.Builder) {
	for i, v := range r.Audit.Violations {
		if i == evidenceViolations {
			break
		}
		l, at := v.Answer.Location, v.Answer.Sent
		fmt.Fprintf(b, "  around violation %d (%s at %s):\n", i+1, v.Answer.Name, l)
		for _, a := range r.History.Answers {
			if a.Location == l && a.Sent.After(at.Add(-time.Second)) && a.Sent.Before(at.Add(time.Second)) {
				fmt.Fprintf(b, "    answer %v\n", a)
			}
		}
		for _, c := range r.History.Changes {
			if c.Location == l && c.At.After(at.Add(-10*time.Second)) && c.At.Before(at.Add(10*time.Second)) {
				fmt.Fprintf(b, "    change %v (after %s)\n", c, c.After.Format("15:04:05.000"))
			}
		}
	}
}
