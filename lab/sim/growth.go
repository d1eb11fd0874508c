package sim

// The fleet-growth story (Kinesis, November 2020): the checker fleet grows by half at once.
// What grows with the fleet must stay bounded per node, and the assignment must move checks to
// the new checkers without a location ever counting fewer reports than the shards promise.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
)

const (
	// maxCheckersPerRegion bounds the nodes network's checkers per region at the start.
	maxCheckersPerRegion = 30
	// maxGrow bounds the checkers one grow step adds.
	maxGrow = 60
	// rebalanceBound bounds the wait of a grow step for the assignment to rebalance, on top
	// of the time the harness stalled meanwhile (its process not scheduled: stallMonitor).
	rebalanceBound = 60 * time.Second
	// rebalanceStable is how long the rebalanced state must hold to count as stable.
	rebalanceStable = 2 * time.Second
	// rebalancePoll is how often a grow step looks at every node.
	rebalancePoll = 50 * time.Millisecond
)

// targetPlan is the assignment over every checker of the network, by probed check: the
// checkers whose reports every location should count, and by checker: what it should probe.
type targetPlan struct {
	byCheck   map[string][]string
	byChecker map[string][]string
	plan      *shard.Plan
}

// planFor computes the assignment of doc over membership m.
func planFor(doc *config.Document, m shard.Membership) (targetPlan, error) {
	p, err := shard.NewPlan(doc, m)
	if err != nil {
		return targetPlan{}, fmt.Errorf("sim: plan: %w", err)
	}
	t := targetPlan{byCheck: map[string][]string{}, byChecker: map[string][]string{}, plan: p}
	for _, c := range doc.Checks {
		if c.Protocol == config.ProtocolCalculated || c.Disabled {
			continue
		}
		for _, r := range c.Regions {
			t.byCheck[c.ID] = append(t.byCheck[c.ID], p.Shard(c.ID, r)...)
		}
		slices.Sort(t.byCheck[c.ID])
	}
	for r, ids := range m {
		for _, id := range ids {
			t.byChecker[id] = p.ChecksFor(r, id)
			slices.Sort(t.byChecker[id])
		}
	}
	return t, nil
}

// membership is every checker of the network, by region.
func (n *nodesNetwork) membership() shard.Membership {
	m := shard.Membership{}
	for _, mb := range n.Members() {
		if c := mb.Config(); c.Roles.Has(agent.RoleChecker) {
			m[c.Region] = append(m[c.Region], c.ID)
		}
	}
	return m
}

// balance is one look at every node against a target plan.
type balance struct {
	covered, exact bool
	fresh          [2]int // fewest and most fresh reports of a probed check at any location
	why            string // the first difference, for a step that times out
}

// look compares every node with t: what each checker reports, and what each location expects
// and counts.
func (n *nodesNetwork) look(t targetPlan) balance {
	b := balance{covered: true, exact: true, fresh: [2]int{-1, 0}}
	differ := func(format string, args ...any) {
		b.exact = false
		if b.why == "" {
			b.why = fmt.Sprintf(format, args...)
		}
	}
	for _, m := range n.Members() {
		cfg, nd := m.Config(), m.Node()
		if cfg.Roles.Has(agent.RoleChecker) {
			var got []string
			for _, r := range nd.CheckerResults() {
				got = append(got, r.CheckID)
			}
			if want := t.byChecker[cfg.ID]; !slices.Equal(got, want) {
				differ("%s reports %v, the plan gives it %v", cfg.ID, got, want)
			}
		}
		if !cfg.Roles.Has(agent.RoleLocation) {
			continue
		}
		for _, id := range sortedKeys(t.byCheck) {
			want := t.byCheck[id]
			e, err := nd.ExplainCheck(id)
			if err != nil {
				b.covered = false
				differ("%s: %v", cfg.ID, err)
				continue
			}
			if b.fresh[0] < 0 || e.Counts.Fresh < b.fresh[0] {
				b.fresh[0] = e.Counts.Fresh
			}
			b.fresh[1] = max(b.fresh[1], e.Counts.Fresh)
			var counted, expected []string
			for _, v := range e.Votes {
				if v.Counted {
					counted = append(counted, v.Checker)
				}
				if v.Expected {
					expected = append(expected, v.Checker)
				}
			}
			expected = append(expected, e.NeverHeard...)
			slices.Sort(counted)
			slices.Sort(expected)
			for _, w := range want {
				if !slices.Contains(counted, w) {
					b.covered = false
				}
			}
			if !slices.Equal(counted, want) || !slices.Equal(expected, want) {
				differ("%s counts %v and expects %v for %s, the plan gives %v", cfg.ID, counted, expected, id, want)
			}
		}
	}
	b.fresh[0] = max(b.fresh[0], 0)
	return b
}

// grow runs a grow step: it adds the checkers, then waits until the assignment has
// rebalanced and stayed so, watching what the locations count meanwhile.
func (n *nodesNetwork) grow(ctx context.Context, doc *config.Document, count int, stalls *stallMonitor, event func(string)) (Rebalance, error) {
	var rb Rebalance
	for _, c := range doc.Checks {
		if c.Protocol != config.ProtocolCalculated && !c.Disabled {
			rb.Want = c.CheckersPerRegion * len(c.Regions)
			break
		}
	}
	old, err := planFor(doc, n.membership())
	if err != nil {
		return rb, err
	}
	rb.FreshBefore = n.look(old).fresh
	start := time.Now()
	if rb.Added, err = n.Grow(count); err != nil {
		return rb, err
	}
	event(fmt.Sprintf("grow: %d checkers started in %v: %s", len(rb.Added), time.Since(start).Round(time.Millisecond), strings.Join(rb.Added, ", ")))
	target, err := planFor(doc, n.membership())
	if err != nil {
		return rb, err
	}
	for id, want := range target.byCheck {
		if !slices.Equal(want, old.byCheck[id]) {
			for _, r := range doc.Regions {
				if !slices.Equal(target.plan.Shard(id, r), old.plan.Shard(id, r)) {
					rb.Moved++
				}
			}
		}
	}
	window := doc.Quorum.FreshnessWindow.Std()
	if window <= 0 {
		window = config.DefaultDocument().Quorum.FreshnessWindow.Std()
	}
	tick := time.NewTicker(rebalancePoll)
	defer tick.Stop()
	var exactSince time.Time
	for looks := 0; ; looks++ {
		now := time.Now()
		b := n.look(target)
		if looks == 0 {
			rb.FreshDuring = b.fresh
		}
		rb.FreshDuring = [2]int{min(rb.FreshDuring[0], b.fresh[0]), max(rb.FreshDuring[1], b.fresh[1])}
		if b.fresh[0] < rb.Want {
			rb.ShortLooks++
			if stalls.since(now.Add(-window)) > 0 {
				rb.ShortStalled++
			}
		}
		if b.covered && rb.Covered == 0 {
			rb.Covered, rb.StalledCovering = now.Sub(start), stalls.since(start)
			event(fmt.Sprintf("grow: every location counts every planned checker, %v after the growth", rb.Covered.Round(10*time.Millisecond)))
		}
		switch {
		case !b.exact:
			exactSince = time.Time{}
		case exactSince.IsZero():
			exactSince = now
		case now.Sub(exactSince) >= rebalanceStable:
			rb.Took, rb.Stalled = exactSince.Sub(start), stalls.since(start)
			event(fmt.Sprintf("grow: rebalanced %v after the growth (%d of the shards moved; stable for %v; the harness stalled %v meanwhile); fresh reports per check %d to %d during it, %d to %d before, shards promise %d",
				rb.Took.Round(10*time.Millisecond), rb.Moved, rebalanceStable, rb.Stalled.Round(10*time.Millisecond), rb.FreshDuring[0], rb.FreshDuring[1], rb.FreshBefore[0], rb.FreshBefore[1], rb.Want))
			return rb, nil
		}
		if stalled := stalls.since(start); now.Sub(start) > rebalanceBound+stalled {
			return rb, fmt.Errorf("not rebalanced within %v, %v of it with the harness stalled (%v allowed): %s",
				now.Sub(start).Round(10*time.Millisecond), stalled.Round(10*time.Millisecond), rebalanceBound, b.why)
		}
		select {
		case <-ctx.Done():
			return rb, fmt.Errorf("sim: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// growth runs a grow or measure step; they need the nodes network.
func (r *runner) growth(ctx context.Context, st Step) error {
	n, ok := r.net.(*nodesNetwork)
	if !ok {
		return fmt.Errorf("%s needs the nodes network (network nodes)", st.Kind)
	}
	if r.res.Growth == nil {
		r.res.Growth = &Growth{}
	}
	g := r.res.Growth
	switch st.Kind {
	case StepGrow:
		r.event(st.String())
		rb, err := n.grow(ctx, r.doc, st.Count, r.stalls, r.event)
		if err != nil {
			return err
		}
		g.Rebalances = append(g.Rebalances, rb)
	case StepMeasure:
		label := fmt.Sprintf("measure %d", len(g.Measures)+1)
		if k := len(g.Rebalances); k > 0 {
			label += fmt.Sprintf(" (after grow %d)", k)
		}
		res, err := n.Measure(label)
		if err != nil {
			return err
		}
		g.Measures = append(g.Measures, res)
		loc, chk := res.Role("location"), res.Role("checker")
		hs := res.HeapSample
		r.event(fmt.Sprintf("%s: %d nodes; goroutines per location %.1f (max %d), per checker %.1f (max %d); sockets per location %.1f, per checker %.1f; heap per node %s (a collection of %v left %s, %s of it allocated while it ran)",
			label, len(res.Nodes), loc.MeanGoroutines, loc.MaxGoroutines, chk.MeanGoroutines, chk.MaxGoroutines,
			loc.MeanSockets, chk.MeanSockets, kib(res.HeapPerNode()), hs.Took.Round(time.Millisecond), mib(hs.After), mib(hs.During)))
	}
	return nil
}
