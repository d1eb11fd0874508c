package netlab

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/oracle"
	"github.com/vigil-dns/vigil/sim"
)

// script runs the steps in order; the first that fails ends the run.
func (r *run) script(ctx context.Context) error {
	for _, st := range r.o.Script.Steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("netlab: %w", err)
		}
		if err := r.step(ctx, st); err != nil {
			return fmt.Errorf("netlab: %s:%d: %s: %w", r.o.Script.Name, st.Line, st, err)
		}
	}
	return nil
}

// step applies one step and records what it did.
func (r *run) step(ctx context.Context, st sim.Step) error {
	if st.Kind == sim.StepHold {
		r.note(st.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(st.For):
			return nil
		}
	}
	begun := time.Now()
	var evs []oracle.Event
	var err error
	switch st.Kind {
	case sim.StepDown, sim.StepUp:
		evs, err = r.stepTarget(ctx, st)
	case sim.StepCut:
		evs, err = r.stepCut(ctx, st)
	case sim.StepCutOneWay:
		evs, err = r.stepCutOneWay(ctx, st)
	case sim.StepLoss:
		evs, err = r.stepLoss(ctx, st)
	case sim.StepLatency:
		evs, err = r.stepLatency(st)
	case sim.StepHeal:
		evs, err = r.stepHeal(ctx)
	case sim.StepKill:
		evs, err = r.stepKill(st)
	case sim.StepKillLeader:
		evs, err = r.stepKillLeader(ctx)
	case sim.StepStart:
		evs, err = r.stepStart(st)
	default:
		return fmt.Errorf("not a step of a real network")
	}
	at := time.Now()
	for i := range evs {
		evs[i].At = at
	}
	r.mu.Lock()
	r.events = append(r.events, evs...)
	r.mu.Unlock()
	took := at.Sub(begun).Round(time.Millisecond)
	for _, e := range evs {
		r.note(fmt.Sprintf("%s (applied in %v)", describe(e), took))
	}
	return err
}

// Each step* applies one kind of step and returns the events it made, also when it fails
// part way (a failure before anything changed returns none).

// stepTarget takes a region's target down or brings it up.
func (r *run) stepTarget(ctx context.Context, st sim.Step) ([]oracle.Event, error) {
	err := r.setTargetDown(ctx, st.Regions[0], st.Kind == sim.StepDown)
	kind := oracle.EventTargetUp
	if st.Kind == sim.StepDown {
		kind = oracle.EventTargetDown
	}
	return []oracle.Event{{Kind: kind, Target: st.Regions[0]}}, err
}

// stepCut cuts a region from every other region, or from the one named second.
func (r *run) stepCut(ctx context.Context, st sim.Step) ([]oracle.Event, error) {
	a := st.Regions[0]
	for _, o := range r.topo.Regions {
		if o.Name != a && (len(st.Regions) == 1 || o.Name == st.Regions[1]) {
			r.faults.Cut[dir{a, o.Name}], r.faults.Cut[dir{o.Name, a}] = true, true
		}
	}
	e := oracle.Event{Kind: oracle.EventCut, A: a}
	if len(st.Regions) == 2 {
		e.B = st.Regions[1]
	}
	return []oracle.Event{e}, r.faults.apply(ctx, r.topo)
}

// stepCutOneWay cuts the traffic from one region to another.
func (r *run) stepCutOneWay(ctx context.Context, st sim.Step) ([]oracle.Event, error) {
	r.faults.Cut[dir{st.Regions[0], st.Regions[1]}] = true
	e := oracle.Event{Kind: oracle.EventCutOneWay, A: st.Regions[0], B: st.Regions[1]}
	return []oracle.Event{e}, r.faults.apply(ctx, r.topo, st.Regions[1])
}

// stepLoss drops a percentage of the packets both ways between two regions.
func (r *run) stepLoss(ctx context.Context, st sim.Step) ([]oracle.Event, error) {
	p, err := strconv.ParseFloat(st.Regions[2], 64)
	if err != nil {
		return nil, err
	}
	r.faults.Loss[dir{st.Regions[0], st.Regions[1]}], r.faults.Loss[dir{st.Regions[1], st.Regions[0]}] = p, p
	e := oracle.Event{Kind: oracle.EventLoss, A: st.Regions[0], B: st.Regions[1], Percent: p}
	return []oracle.Event{e}, r.faults.apply(ctx, r.topo, st.Regions[0], st.Regions[1])
}

// stepLatency delays the link between two regions.
func (r *run) stepLatency(st sim.Step) ([]oracle.Event, error) {
	l := r.topo.link(st.Regions[0], st.Regions[1])
	if l == nil {
		return nil, fmt.Errorf("no link between %s and %s", st.Regions[0], st.Regions[1])
	}
	l.SetShape(Shape{Latency: st.For, Jitter: st.Jitter})
	return []oracle.Event{{Kind: oracle.EventLatency, A: st.Regions[0], B: st.Regions[1], Delay: st.For, Jitter: st.Jitter}}, nil
}

// stepHeal removes every cut, loss and delay.
func (r *run) stepHeal(ctx context.Context) ([]oracle.Event, error) {
	r.faults = newLinkFaults()
	err := r.faults.apply(ctx, r.topo)
	for _, l := range r.topo.Links {
		l.SetShape(Shape{})
	}
	return []oracle.Event{{Kind: oracle.EventHealAll}}, err
}

// stepKill kills the named process.
func (r *run) stepKill(st sim.Step) ([]oracle.Event, error) {
	p := r.fleet.find(st.Regions[0])
	if p == nil {
		return nil, fmt.Errorf("no process %q (processes: %s)", st.Regions[0], strings.Join(r.fleet.ids(), ", "))
	}
	err := p.kill()
	return []oracle.Event{{Kind: oracle.EventKill, Node: p.ID}}, err
}

// stepKillLeader kills the control plane's leader.
func (r *run) stepKillLeader(ctx context.Context) ([]oracle.Event, error) {
	p, err := r.leader(ctx)
	if err != nil {
		return nil, err
	}
	err = p.kill()
	return []oracle.Event{{Kind: oracle.EventKillLeader, Node: p.ID}}, err
}

// stepStart starts the named process, or every stopped one ("all"), or every stopped voter
// ("voters"), stopping at the first that fails.
func (r *run) stepStart(st sim.Step) ([]oracle.Event, error) {
	var todo []*Proc
	switch id := st.Regions[0]; id {
	case "all", "voters":
		for _, p := range r.fleet.procs {
			if !p.running() && (id == "all" || p.Kind == KindVoter) {
				todo = append(todo, p)
			}
		}
	default:
		p := r.fleet.find(id)
		if p == nil {
			return nil, fmt.Errorf("no process %q (processes: %s)", id, strings.Join(r.fleet.ids(), ", "))
		}
		todo = append(todo, p)
	}
	var evs []oracle.Event
	for _, p := range todo {
		if err := p.start(); err != nil {
			return evs, err
		}
		evs = append(evs, oracle.Event{Kind: oracle.EventStart, Node: p.ID})
	}
	return evs, nil
}

// describe says what an event did, for the timeline.
func describe(e oracle.Event) string {
	switch e.Kind {
	case oracle.EventCut:
		if e.B == "" {
			return "cut " + e.A + " from every region"
		}
		return "cut " + e.A + " <-> " + e.B
	case oracle.EventCutOneWay:
		return "cut " + e.A + " -> " + e.B + " (one way)"
	case oracle.EventHealAll:
		return "heal: every link restored"
	case oracle.EventLoss:
		return fmt.Sprintf("loss %s <-> %s: %g%% each way", e.A, e.B, e.Percent)
	case oracle.EventLatency:
		return fmt.Sprintf("latency %s <-> %s: %v ± %v each way", e.A, e.B, e.Delay, e.Jitter)
	case oracle.EventTargetDown, oracle.EventTargetUp:
		return string(e.Kind) + " " + e.Target
	default:
		return string(e.Kind) + " " + e.Node
	}
}

// leader returns the voter process the running voters name as their leader, waiting up to
// 15s for one to be known.
func (r *run) leader(ctx context.Context) (*Proc, error) {
	var p *Proc
	err := until(ctx, 15*time.Second, func() error {
		var last error = fmt.Errorf("no voter running")
		for _, v := range r.fleet.ofKind(KindVoter) {
			if !v.running() {
				continue
			}
			cv, err := r.cluster(ctx, v)
			if err == nil && cv.Leader == "" {
				err = fmt.Errorf("%s knows no leader", v.ID)
			}
			if err != nil {
				last = err
				continue
			}
			if p = r.fleet.find(cv.Leader); p == nil || !p.running() {
				return fmt.Errorf("the leader %q is not a running voter", cv.Leader)
			}
			return nil
		}
		return last
	})
	return p, err
}
