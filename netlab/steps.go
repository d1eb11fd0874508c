package netlab

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	var evs []FaultEvent
	ev := func(kind, a, b string) *FaultEvent {
		evs = append(evs, FaultEvent{Begun: begun, Kind: kind, A: a, B: b, Step: st.String()})
		return &evs[len(evs)-1]
	}
	var err error
	switch st.Kind {
	case sim.StepDown, sim.StepUp:
		err = r.setTarget(ctx, st.Regions[0], st.Kind == sim.StepDown)
		ev(map[bool]string{true: EventTargetDown, false: EventTargetUp}[st.Kind == sim.StepDown], st.Regions[0], "")
	case sim.StepCut:
		pairs := [][2]string{}
		if len(st.Regions) == 2 {
			pairs = append(pairs, [2]string{st.Regions[0], st.Regions[1]})
		} else {
			for _, o := range r.topo.Regions {
				if o.Name != st.Regions[0] {
					pairs = append(pairs, [2]string{st.Regions[0], o.Name})
				}
			}
		}
		for _, p := range pairs {
			r.faults.Cut[dir{p[0], p[1]}], r.faults.Cut[dir{p[1], p[0]}] = true, true
			ev(EventCut, p[0], p[1])
		}
		err = r.faults.apply(ctx, r.topo)
	case sim.StepCutOneWay:
		r.faults.Cut[dir{st.Regions[0], st.Regions[1]}] = true
		ev(EventCutOneWay, st.Regions[0], st.Regions[1])
		err = r.faults.apply(ctx, r.topo, st.Regions[1])
	case sim.StepLoss:
		p, perr := strconv.ParseFloat(st.Regions[2], 64)
		if perr != nil {
			return perr
		}
		r.faults.Loss[dir{st.Regions[0], st.Regions[1]}], r.faults.Loss[dir{st.Regions[1], st.Regions[0]}] = p, p
		ev(EventLoss, st.Regions[0], st.Regions[1]).Percent = p
		err = r.faults.apply(ctx, r.topo, st.Regions[0], st.Regions[1])
	case sim.StepLatency:
		l := r.topo.link(st.Regions[0], st.Regions[1])
		if l == nil {
			return fmt.Errorf("no link between %s and %s", st.Regions[0], st.Regions[1])
		}
		l.SetShape(Shape{Latency: st.For, Jitter: st.Jitter})
		e := ev(EventLatency, st.Regions[0], st.Regions[1])
		e.Latency, e.Jitter = st.For, st.Jitter
	case sim.StepHeal:
		r.faults = NewLinkFaults()
		err = r.faults.apply(ctx, r.topo)
		for _, l := range r.topo.Links {
			l.SetShape(Shape{})
		}
		ev(EventHealAll, "", "")
	case sim.StepKill:
		p := r.fleet.find(st.Regions[0])
		if p == nil {
			return fmt.Errorf("no process %q (processes: %s)", st.Regions[0], strings.Join(r.fleet.ids(), ", "))
		}
		err = p.kill()
		ev(EventKill, p.Region.Name, "").Node = p.ID
	case sim.StepKillLeader:
		var p *Proc
		if p, err = r.leader(ctx); err != nil {
			return err
		}
		err = p.kill()
		ev(EventKillLeader, p.Region.Name, "").Node = p.ID
	case sim.StepStart:
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
				return fmt.Errorf("no process %q (processes: %s)", id, strings.Join(r.fleet.ids(), ", "))
			}
			todo = append(todo, p)
		}
		for _, p := range todo {
			if err = p.start(); err != nil {
				break
			}
			ev(EventStart, p.Region.Name, "").Node = p.ID
		}
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

// describe says what an event did, for the timeline.
func describe(e FaultEvent) string {
	switch e.Kind {
	case EventCut:
		return "cut " + e.A + " <-> " + e.B
	case EventCutOneWay:
		return "cut " + e.A + " -> " + e.B + " (one way)"
	case EventHealAll:
		return "heal: every link restored"
	case EventLoss:
		return fmt.Sprintf("loss %s <-> %s: %g%% each way", e.A, e.B, e.Percent)
	case EventLatency:
		return fmt.Sprintf("latency %s <-> %s: %v ± %v each way", e.A, e.B, e.Latency, e.Jitter)
	case EventTargetDown, EventTargetUp:
		return e.Kind + " " + e.A
	default:
		return e.Kind + " " + e.Node
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
