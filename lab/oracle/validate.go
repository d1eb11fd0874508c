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
	var p problems
	if r.Document == nil {
		p.add("no document")
	}
	t := &r.Topology
	targets, nodes := p.topology(t)
	for i, st := range r.Stalls {
		if st.To.Before(st.From) {
			p.add("stall %d ends before it begins", i)
		}
	}
	if r.Start.IsZero() {
		p.add("no start: the instant the network was ready")
	}
	if r.End.Before(r.Start) {
		p.add("the run ends (%v) before it starts (%v)", r.End, r.Start)
	}
	for i, e := range r.Events {
		what := fmt.Sprintf("event %d (%v)", i, e)
		if i > 0 && e.At.Before(r.Events[i-1].At) {
			p.add("%s: before the event it follows", what)
		}
		p.event(t, what, e, targets, nodes)
	}
	for i, q := range r.Queries {
		if !nodes[q.Location] {
			p.add("query %d (%v): unknown location %q", i, q, q.Location)
		}
		if q.Received.Before(q.Sent) && q.answered() {
			p.add("query %d (%v): received before it was sent", i, q)
		}
	}
	return errors.Join(p.errs...)
}

// problems collects what Validate finds, at most maxErrors of them and a last line saying
// that more were not listed.
type problems struct {
	errs []error
}

// add records one problem.
func (p *problems) add(format string, args ...any) {
	if len(p.errs) == maxErrors {
		p.errs = append(p.errs, errors.New("oracle: more problems not listed"))
	}
	if len(p.errs) < maxErrors {
		p.errs = append(p.errs, fmt.Errorf("oracle: "+format, args...))
	}
}

// region records a problem when t has no region name.
func (p *problems) region(t *Topology, what, name string) {
	if !slices.Contains(t.Regions, name) {
		p.add("%s: unknown region %q", what, name)
	}
}

// topology checks t's regions, targets, checks and nodes, and returns the sets of the target
// and node names.
func (p *problems) topology(t *Topology) (targets, nodes map[string]bool) {
	if len(t.Regions) == 0 {
		p.add("no regions")
	}
	targets = map[string]bool{}
	for _, tg := range t.Targets {
		if targets[tg.Name] {
			p.add("target %q twice", tg.Name)
		}
		targets[tg.Name] = true
		p.region(t, "target "+tg.Name, tg.Region)
	}
	for _, id := range slices.Sorted(maps.Keys(t.Checks)) {
		if !targets[t.Checks[id]] {
			p.add("check %s: unknown target %q", id, t.Checks[id])
		}
	}
	nodes = map[string]bool{}
	for _, n := range t.Nodes {
		if nodes[n.Name] {
			p.add("node %q twice", n.Name)
		}
		nodes[n.Name] = true
		p.region(t, "node "+n.Name, n.Region)
	}
	return targets, nodes
}

// event checks that e, described as what, names regions, targets and nodes of t and has sane
// figures for its kind.
func (p *problems) event(t *Topology, what string, e Event, targets, nodes map[string]bool) {
	switch e.Kind {
	case EventLink:
		if err := e.Link.Validate(t.Regions); err != nil {
			p.add("%s: %v", what, err)
		} else if e.Link.A == e.Link.B && e.Link.A != "" {
			p.add("%s: a link joins two regions", what)
		}
	case EventTargetDown, EventTargetUp:
		if !targets[e.Target] {
			p.add("%s: unknown target %q", what, e.Target)
		}
	case EventKill, EventStart:
		if !nodes[e.Node] {
			p.add("%s: unknown node %q", what, e.Node)
		}
	case EventKillLeader:
		if e.Node != "" && !nodes[e.Node] {
			p.add("%s: unknown node %q", what, e.Node)
		}
	default:
		p.add("%s: unknown kind %q", what, e.Kind)
	}
}
