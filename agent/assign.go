package agent

import (
	"time"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/control/state"
)

// The checker's assignment (which checks it probes, the plan of every check's shards, the
// checks it hands off) is decided by checker.Assignment; this file and handoff.go wire it to
// the node's configuration, gossip and checker.

// configureLocked brings the assignment to s, changed as ch says. Called with n.mu held.
func (n *Node) configureLocked(s *state.State, ch state.Changes) {
	if err := n.asg.Configure(s, ch.Checks, ch.Full || ch.Settings, n.liveCheckers()); err != nil {
		n.log.Error("node: assignment plan", "err", err)
	}
}

// liveCheckers returns the live checkers per region as gossip shows them (none without a
// pool).
func (n *Node) liveCheckers() shard.Membership {
	if n.pool == nil {
		return nil
	}
	return n.pool.Checkers()
}

// reassign brings the assignment to the current membership and gives the checker its checks
// when the assignment says they are due (checker.Assignment: nothing that grows with the
// checks unless something changed). It also gives gossip the freshness window in force, which
// a checker's heartbeats follow.
func (n *Node) reassign() {
	n.mu.Lock()
	if n.settings != nil {
		n.pool.SetFreshnessWindow(freshnessWindow(n.settings))
	}
	if n.state == nil {
		n.mu.Unlock()
		return
	}
	if err := n.asg.SetMembers(n.liveCheckers()); err != nil {
		n.log.Error("node: assignment update", "err", err)
	}
	if n.chk == nil || !n.asg.Due() {
		n.mu.Unlock()
		return
	}
	now := time.Now()
	window := freshnessWindow(n.settings)
	mine := n.asg.Give(now, window, n.heardLocked(now, window), n.reportedLocked())
	n.mu.Unlock()
	if err := n.chk.SetChecks(mine); err != nil {
		n.log.Warn("node: some assigned checks cannot be probed", "err", err)
	}
}
