package agent

import (
	"slices"
	"time"

	"github.com/vigil-dns/vigil/quorum"
)

// The make-before-break decision (which checks a checker keeps probing after it left their
// shards, and for how long) is checker.Assignment's (checker.NextHandoffs); this file gives it
// what gossip and the checker know.

// heardLocked returns whether checker holder's report of check id counts in the pool's table
// at now: there (the pool lists only reports with a status) and fresh in window. The check's
// reports are looked up once for the calls about one check in a row. Called with n.mu held.
func (n *Node) heardLocked(now time.Time, window time.Duration) func(id, holder string) bool {
	var (
		last    string
		looked  bool
		reports []quorum.Report
	)
	return func(id, holder string) bool {
		if !looked || id != last {
			last, looked, reports = id, true, n.pool.ReportsFor(id)
		}
		i := slices.IndexFunc(reports, func(r quorum.Report) bool { return r.Checker == holder })
		return i >= 0 && reports[i].Fresh(now, window) // ReportsFor holds only reports with a status
	}
}

// reportedLocked returns whether the checker has a report of check id. Called with n.mu held.
func (n *Node) reportedLocked() func(id string) bool {
	reported := map[string]bool{}
	for _, r := range n.chk.Reports() {
		reported[r.CheckID] = true
	}
	return func(id string) bool { return reported[id] }
}

// handingOff reports whether the checker is handing off a check, so that the data plane's
// loop looks again whether its new holders report it.
func (n *Node) handingOff() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.asg.HandingOff()
}
