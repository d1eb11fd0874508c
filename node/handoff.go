package node

import (
	"slices"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
)

// Make before break. When the assignment moves a check from this checker to another (a
// checker joined its region, say), the check's new holder reports it only after its first
// probe, up to an interval later; a checker that withdrew its own report at once would leave
// every location counting fewer reports than the shards promise meanwhile (vigil sim
// fleet-growth saw 2 of 6 when a third more checkers joined). So a checker that leaves a
// shard keeps probing and reporting the check until every checker of its region that the plan
// now gives the check reports it, fresh, in this node's table; and at most handoffLimit.

// handoffIntervals bounds a handoff in probe intervals: the new holder's first probe is due
// within one interval of its assignment, and its views of membership may lag this node's.
const handoffIntervals = 3

// handoffLimit is how long a checker that left a check's shard keeps probing it, at most: three
// probe intervals and a timeout for the new holders' first probes, and a freshness window
// for their reports to spread (a location waits that long, too, before it calls a silent
// checker stale). vigil sim fleet-growth, on a machine loaded 7 times over its cores, saw the
// new holders counted up to 9s after they joined.
func handoffLimit(c *config.Check, window time.Duration) time.Duration {
	return handoffIntervals*c.Interval.Std() + c.Timeout.Std() + window
}

// nextHandoffs decides which checks a checker keeps probing although the plan no longer gives
// them to it. given are the checks it probed until now, mine those the plan gives it now,
// prev the handoffs in progress (check to when it was left). A check left is handed off until
// covered says that its new holders report it, or its limit has passed since it was left;
// limit says, too, whether the configuration still has the check probed (ok false: dropped at
// once). It returns the handoffs still in progress.
func nextHandoffs(prev map[string]time.Time, given, mine []string, now time.Time,
	limit func(id string) (time.Duration, bool), covered func(id string) bool) map[string]time.Time {
	var next map[string]time.Time
	for _, id := range given {
		if slices.Contains(mine, id) {
			continue
		}
		max, ok := limit(id)
		if !ok {
			continue
		}
		since, ok := prev[id]
		if !ok {
			since = now
		}
		if now.Sub(since) >= max || covered(id) {
			continue
		}
		if next == nil {
			next = map[string]time.Time{}
		}
		next[id] = since
	}
	return next
}

// handOffLocked adds to mine, the checks the plan gives this checker, the checks it is
// handing off, and remembers what it gives the checker. Called with n.mu held.
func (n *Node) handOffLocked(mine []config.Check, now time.Time) []config.Check {
	ids := make([]string, 0, len(mine))
	for _, c := range mine {
		ids = append(ids, c.ID)
	}
	window := freshnessWindow(n.doc)
	limit := func(id string) (time.Duration, bool) {
		c, ok := n.doc.CheckByID(id)
		if !ok || c.Protocol == config.ProtocolCalculated || c.Disabled {
			return 0, false
		}
		return handoffLimit(c, window), true
	}
	covered := func(id string) bool {
		reports := n.pool.ReportsFor(id)
		for _, holder := range n.plan.Shard(id, n.cfg.Region) {
			if holder == n.cfg.ID {
				continue
			}
			i := slices.IndexFunc(reports, func(r gossip.Report) bool { return r.Checker == holder })
			if i < 0 || reports[i].Entry.Status == gossip.StatusUnknown || !reports[i].Fresh(now, window) {
				return false
			}
		}
		return true
	}
	n.handoffs = nextHandoffs(n.handoffs, n.given, ids, now, limit, covered)
	for _, id := range sortedIDs(n.handoffs) {
		if c, ok := n.doc.CheckByID(id); ok {
			mine = append(mine, *c)
			ids = append(ids, id)
		}
	}
	n.given = ids
	return mine
}

// handingOff reports whether the checker is handing off a check, so that the data plane's
// loop looks again whether its new holders report it.
func (n *Node) handingOff() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.handoffs) > 0
}

// sortedIDs returns the keys of m in order.
func sortedIDs(m map[string]time.Time) []string {
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
