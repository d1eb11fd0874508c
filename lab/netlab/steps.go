package netlab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/lab/oracle"
	"github.com/vigil-dns/vigil/lab/sim"
	"github.com/vigil-dns/vigil/regions"
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
	case sim.StepCut, sim.StepCutOneWay, sim.StepLoss, sim.StepLatency, sim.StepHeal:
		evs, err = r.stepLink(ctx, st.Fault)
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

// stepLink applies a link fault: a cut or a loss as the fault rules of the namespaces
// whose arriving packets change, a latency as the wire's shape, a heal as both.
func (r *run) stepLink(ctx context.Context, f regions.Fault) ([]oracle.Event, error) {
	if err := r.faults.Apply(f); err != nil {
		return nil, err
	}
	evs := []oracle.Event{{Kind: oracle.EventLink, Link: f}}
	var changed []string // the namespaces whose rules change; none: every one
	switch f.Kind {
	case regions.Latency:
		l := r.topo.link(f.A, f.B)
		if l == nil {
			return nil, fmt.Errorf("no link between %s and %s", f.A, f.B)
		}
		l.SetShape(Shape{Latency: f.Delay, Jitter: f.Jitter})
		return evs, nil
	case regions.Heal:
		for _, l := range r.topo.Links {
			l.SetShape(Shape{})
		}
	case regions.CutOneWay:
		changed = []string{f.B}
	case regions.Loss:
		changed = []string{f.A, f.B}
	}
	return evs, applyFaults(ctx, r.faults, r.topo, changed...)
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
	switch f := e.Link; {
	case e.Kind != oracle.EventLink:
	case f.Kind == regions.Cut && f.B == "":
		return "cut " + f.A + " from every region"
	case f.Kind == regions.Cut:
		return "cut " + f.A + " <-> " + f.B
	case f.Kind == regions.CutOneWay:
		return "cut " + f.A + " -> " + f.B + " (one way)"
	case f.Kind == regions.Heal:
		return "heal: every link restored"
	case f.Kind == regions.Loss:
		return fmt.Sprintf("loss %s <-> %s: %g%% each way", f.A, f.B, f.Loss)
	case f.Kind == regions.Latency:
		return fmt.Sprintf("latency %s <-> %s: %v ± %v each way", f.A, f.B, f.Delay, f.Jitter)
	}
	switch e.Kind {
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
