package oracle

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// maxErrors bounds the problems Validate lists.
const maxErrors = 20

// Validate reports every reason the oracle cannot judge r: a missing document, an event or a
// query that names a region, target or node the topology does not hold, events out of time
// order, a check mapped to an unknown target.
func (r *Run) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		if len(errs) == maxErrors {
			errs = append(errs, errors.New("oracle: more problems not listed"))
		}
		if len(errs) < maxErrors {
			errs = append(errs, fmt.Errorf("oracle: "+format, args...))
		}
	}
	if r.Document == nil {
		bad("no document")
	}
	t := &r.Topology
	if len(t.Regions) == 0 {
		bad("no regions")
	}
	region := func(what, name string) {
		if !slices.Contains(t.Regions, name) {
			bad("%s: unknown region %q", what, name)
		}
	}
	targets := map[string]bool{}
	for _, tg := range t.Targets {
		if targets[tg.Name] {
			bad("target %q twice", tg.Name)
		}
		targets[tg.Name] = true
		region("target "+tg.Name, tg.Region)
	}
	for _, id := range slices.Sorted(maps.Keys(t.Checks)) {
		if !targets[t.Checks[id]] {
			bad("check %s: unknown target %q", id, t.Checks[id])
		}
	}
	nodes := map[string]bool{}
	for _, n := range t.Nodes {
		if nodes[n.Name] {
			bad("node %q twice", n.Name)
		}
		nodes[n.Name] = true
		region("node "+n.Name, n.Region)
	}
	for i, st := range r.Stalls {
		if st.To.Before(st.From) {
			bad("stall %d ends before it begins", i)
		}
	}
	if r.Start.IsZero() {
		bad("no start: the instant the network was ready")
	}
	if r.End.Before(r.Start) {
		bad("the run ends (%v) before it starts (%v)", r.End, r.Start)
	}
	for i, e := range r.Events {
		what := fmt.Sprintf("event %d (%v)", i, e)
		if i > 0 && e.At.Before(r.Events[i-1].At) {
			bad("%s: before the event it follows", what)
		}
		switch e.Kind {
		case EventCut, EventHeal:
			region(what, e.A)
			if e.B != "" {
				region(what, e.B)
			}
		case EventCutOneWay, EventLoss, EventLatency:
			region(what, e.A)
			region(what, e.B)
			if e.A == e.B {
				bad("%s: a link joins two regions", what)
			}
			if e.Kind == EventLoss && (e.Percent < 0 || e.Percent > 100) {
				bad("%s: loss is a percentage", what)
			}
			if e.Kind == EventLatency && (e.Delay < 0 || e.Jitter < 0) {
				bad("%s: negative latency", what)
			}
		case EventTargetDown, EventTargetUp:
			if !targets[e.Target] {
				bad("%s: unknown target %q", what, e.Target)
			}
		case EventKill, EventStart:
			if !nodes[e.Node] {
				bad("%s: unknown node %q", what, e.Node)
			}
		case EventKillLeader:
			if e.Node != "" && !nodes[e.Node] {
				bad("%s: unknown node %q", what, e.Node)
			}
		case EventHealAll:
		default:
			bad("%s: unknown kind %q", what, e.Kind)
		}
	}
	for i, q := range r.Queries {
		if !nodes[q.Location] {
			bad("query %d (%v): unknown location %q", i, q, q.Location)
		}
		if q.Received.Before(q.Sent) && q.answered() {
			bad("query %d (%v): received before it was sent", i, q)
		}
	}
	return errors.Join(errs...)
}
