package node

import (
	"maps"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/quorum"
)

// The make-before-break decision (which checks a checker keeps probing after it left their
// shards, and for how long) is checker.NextHandoffs; this file wires it to the node's state.

// handOffLocked adds to mine, the checks the plan gives this checker, the checks it is
// handing off, and remembers what it gives the checker. Called with n.mu held.
func (n *Node) handOffLocked(mine []config.Check, now time.Time) []config.Check {
	ids := make([]string, 0, len(mine))
	for _, c := range mine {
		ids = append(ids, c.ID)
	}
	window := freshnessWindow(n.settings)
	times := func(id string) (checker.HandoffTimes, bool) {
		c, ok := n.state.CheckRef(id)
		if !ok || c.Protocol == config.ProtocolCalculated || c.Disabled {
			return checker.HandoffTimes{}, false
		}
		return checker.HandoffTimes{Limit: checker.HandoffLimit(c, window), Overlap: max(c.Interval.Std(), window)}, true
	}
	covered := func(id string) bool {
		reports := n.pool.ReportsFor(id)
		for _, holder := range n.plan.Shard(id, n.cfg.Region) {
			if holder == n.cfg.ID {
				continue
			}
			i := slices.IndexFunc(reports, func(r quorum.Report) bool { return r.Checker == holder })
			if i < 0 || !reports[i].Fresh(now, window) { // ReportsFor holds only reports with a status
				return false
			}
		}
		return true
	}
	reported := map[string]bool{}
	for _, r := range n.chk.Reports() {
		reported[r.CheckID] = true
	}
	n.handoffs = checker.NextHandoffs(n.handoffs, n.given, ids, now, times, covered, func(id string) bool { return reported[id] })
	for _, id := range slices.Sorted(maps.Keys(n.handoffs)) {
		if c, ok := n.state.CheckRef(id); ok {
			mine = append(mine, *c)
			ids = append(ids, id)
		}
	}
	n.given = ids
	n.givenSet = make(map[string]bool, len(ids))
	for _, id := range ids {
		n.givenSet[id] = true
	}
	return mine
}

// handingOff reports whether the checker is handing off a check, so that the data plane's
// loop looks again whether its new holders report it.
func (n *Node) handingOff() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.handoffs) > 0
}
