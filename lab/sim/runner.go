package sim

// The script's steps run on a started network, against the fault model.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
	"github.com/vigil-dns/vigil/quorum"
)

// runner runs one script on a started network.
type runner struct {
	o       Options
	res     *Result
	regions []string
	doc     *config.Document
	targets map[string]string
	net     network
	sampler *sampler
	stalls  *stallMonitor
	rec     *oracleRecorder // the faults, for the independent oracle

	readyAt          time.Time
	firstFault       time.Time
	lastRepair       time.Time
	mu               sync.Mutex         // guards the timeline
	kept             map[[2]string]bool // (location, check) pairs the model kept healthy so far
	detected, healed bool
	unmodelled       bool // a fault the model cannot say anything of was injected (chaos_steps.go)
}

// event adds a line to the timeline, at the time since the network was ready.
func (r *runner) event(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := Event{What: what}
	if !r.readyAt.IsZero() {
		e.At = time.Since(r.readyAt)
	}
	r.res.Timeline = append(r.res.Timeline, e)
	if r.o.Timeline != nil {
		fmt.Fprintf(r.o.Timeline, "%8s  %s\n", formatOffset(e.At), what)
	}
}

// formatOffset formats a time since the start of a run, e.g. "+12.34s".
func formatOffset(d time.Duration) string {
	return fmt.Sprintf("+%.2fs", d.Seconds())
}

// script runs the steps of the script in order.
func (r *runner) script(ctx context.Context, faults Faults) error {
	r.kept = map[[2]string]bool{}
	r.keep(faults)
	for _, st := range r.o.Script.Steps {
		switch {
		case st.Kind == StepHold:
			r.event(fmt.Sprintf("hold %v", st.For))
			select {
			case <-ctx.Done():
				return fmt.Errorf("sim: %w", ctx.Err())
			case <-time.After(st.For):
			}
		case st.Kind == StepWait:
			took, err := r.settle(ctx, faults, st.For)
			if err != nil {
				return fmt.Errorf("sim: %s:%d: %w", r.o.Script.Name, st.Line, err)
			}
			now := time.Now()
			r.event(fmt.Sprintf("settled: every location matches the fault model, %v after the last step", took.Round(10*time.Millisecond)))
			if !r.firstFault.IsZero() && !r.detected {
				r.detected = true
				r.res.Detection = now.Sub(r.firstFault)
			}
			if !r.lastRepair.IsZero() && !r.healed {
				r.healed = true
				r.res.Recovery = now.Sub(r.lastRepair)
			}
		case st.Kind == StepGrow || st.Kind == StepMeasure:
			if err := r.growth(ctx, st); err != nil {
				return fmt.Errorf("sim: %s:%d: %w", r.o.Script.Name, st.Line, err)
			}
		default:
			began := time.Now()
			if err := r.inject(st); err != nil {
				return fmt.Errorf("sim: %s:%d: %w", r.o.Script.Name, st.Line, err)
			}
			now := time.Now()
			switch st.Kind {
			case StepRestart:
				r.rec.restart(began, now)
			case StepKill:
				// A killed node is down from the moment the kill begins, as a crash is: a
				// location stopping closes its DNS socket first, and the rest of its stop
				// can take seconds (the nightly chaos saw 12s across a cut), during which
				// its queries were refused but not excused.
				r.rec.record(st, began)
			default:
				r.rec.record(st, now)
			}
			faults.Apply(st)
			r.keep(faults)
			r.event(st.String() + r.expectation(faults))
			if st.fault() && r.firstFault.IsZero() {
				r.firstFault = now
			}
			if st.repair() {
				if r.lastRepair.IsZero() {
					r.res.Counted = r.sampler.extremes()
				} else {
					mergeCounted(r.res.Counted, r.sampler.extremes())
				}
				r.sampler.arm()
				r.lastRepair, r.healed = now, false
			}
		}
	}
	if !r.firstFault.IsZero() {
		end := r.lastRepair
		if end.IsZero() || end.Before(r.firstFault) {
			end = time.Now()
		}
		r.res.Faulted = end.Sub(r.firstFault)
	}
	return nil
}

// inject makes a fault step happen on the network.
func (r *runner) inject(st Step) error {
	switch st.Kind {
	case StepDown, StepUp:
		return r.net.SetTargetDown(st.Regions[0], st.Kind == StepDown)
	case StepCut, StepHeal:
		return r.net.Apply(st.Fault)
	case StepOffline, StepOnline:
		return r.net.SetOffline(st.Regions[0], st.Kind == StepOffline)
	case StepControlDown:
		return r.net.StopControl()
	case StepRestart:
		return r.net.Restart()
	case StepPoison, StepCure:
		return r.net.SetPoisoned(st.Kind == StepPoison)
	case StepKill, StepStart, StepKillLeader, StepCutOneWay, StepLoss, StepLatency:
		return r.injectChaos(st)
	}
	return fmt.Errorf("unknown step %q", st.Kind)
}

// expectation says, for the timeline, which verdicts the model expects not to be healthy.
func (r *runner) expectation(f Faults) string {
	exp := Expect(r.doc, r.regions, r.targets, f)
	var parts []string
	for _, l := range r.regions {
		var bad []string
		for _, id := range sortedKeys(exp[l]) {
			if exp[l][id] != quorum.StateHealthy {
				bad = append(bad, id)
			}
		}
		if len(bad) > 0 {
			parts = append(parts, l+" should drop "+strings.Join(bad, ","))
		}
	}
	if len(parts) == 0 {
		return " (model: every verdict healthy)"
	}
	return " (model: " + strings.Join(parts, "; ") + ")"
}

// keep removes from the kept pairs those the model does not expect healthy under f; the
// first call sets them.
func (r *runner) keep(f Faults) {
	exp := Expect(r.doc, r.regions, r.targets, f)
	first := len(r.kept) == 0
	for l, states := range exp {
		for id, s := range states {
			k := [2]string{l, id}
			switch {
			case s != quorum.StateHealthy:
				r.kept[k] = false
			case first:
				r.kept[k] = true
			}
		}
	}
}

// flips returns the verdict changes, after the network was ready, of the pairs the model
// kept healthy throughout.
func (r *runner) flips() []answeraudit.Change {
	if r.readyAt.IsZero() || r.unmodelled {
		return nil
	}
	var out []answeraudit.Change
	restarted := map[[2]string]bool{} // the pair lost its verdict and has not decided since
	for _, c := range r.sampler.history() {
		k := [2]string{c.Location, c.Check}
		// A restarted location has no verdict, then unknown ones until its reports are fresh
		// again, and serves the check meanwhile (fail open): neither those nor the healthy
		// verdict that ends them is a flip; an unhealthy one is. A sampler may miss the moment
		// with no verdict (a restart between two samples): an undecided verdict says it too.
		switch {
		case c.Undecided:
			restarted[k] = true
			continue
		case restarted[k] && c.State == quorum.StateUnknown:
			continue
		case restarted[k]:
			restarted[k] = false
			if c.State == quorum.StateHealthy {
				continue
			}
		}
		if r.kept[k] && c.At.After(r.readyAt) {
			out = append(out, c)
		}
	}
	return out
}

// settle waits until every location's verdicts match the model under f, and returns how
// long it took; after within on an idle machine, scaled by the slowdown measured meanwhile
// (internal/calibrate: probes, gossip and verdicts all wait for a CPU on a busy machine), it
// fails with what still differs.
func (r *runner) settle(ctx context.Context, f Faults, within time.Duration) (time.Duration, error) {
	exp := Expect(r.doc, r.regions, r.targets, f)
	start := time.Now()
	m := calibrate.Start()
	defer m.Stop()
	tick := time.NewTicker(r.o.SampleInterval)
	defer tick.Stop()
	for {
		diff := r.differences(exp)
		if len(diff) == 0 {
			return time.Since(start), nil
		}
		if !m.Within(within) {
			return 0, fmt.Errorf("verdicts did not settle within %v of an idle machine (%v): %s", within, m.Reading(), strings.Join(diff, "; "))
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-tick.C:
		}
	}
}

// differences lists the verdicts that differ from exp, as the sampler last saw them (so
// that a settled network's verdicts are in the history too).
func (r *runner) differences(exp map[string]map[string]quorum.State) []string {
	var out []string
	seen := r.sampler.states()
	for _, l := range r.regions {
		for _, id := range sortedKeys(exp[l]) {
			if s := seen[l][id]; s != exp[l][id] {
				out = append(out, fmt.Sprintf("%s at %s is %s, want %s", id, l, s, exp[l][id]))
			}
		}
	}
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// mergeCounted widens the extremes of into by those of from.
func mergeCounted(into, from map[string]map[string]Counted) {
	for l, m := range from {
		if into[l] == nil {
			into[l] = map[string]Counted{}
		}
		for id, c := range m {
			o, ok := into[l][id]
			if !ok {
				into[l][id] = c
				continue
			}
			w := Counted{MinFresh: min(o.MinFresh, c.MinFresh), MaxFresh: max(o.MaxFresh, c.MaxFresh), MaxUnhealthy: max(o.MaxUnhealthy, c.MaxUnhealthy)}
			w.widen(o.UnhealthyFrom)
			w.widen(c.UnhealthyFrom)
			into[l][id] = w
		}
	}
}
