package node

import (
	"maps"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/shard"
)

// updatePlanLocked brings the assignment plan to s: check by check for the checks ch names,
// or built afresh. Called with n.mu held.
func (n *Node) updatePlanLocked(s *control.State, ch control.Changes) {
	if n.plan != nil && !ch.Full && !ch.Settings {
		for _, id := range ch.Checks {
			var err error
			if c, ok := s.CheckRef(id); ok {
				err = n.plan.Put(c)
			} else {
				n.plan.Remove(id)
			}
			if err != nil {
				n.log.Error("node: assignment plan", "check", id, "err", err)
			}
		}
		return
	}
	members := n.membershipLocked(s.Regions())
	plan, err := shard.NewPlanOf(s.Regions(), s.Checks(), members)
	if err != nil {
		n.log.Error("node: assignment plan", "err", err)
		plan, members = nil, nil
	}
	n.plan, n.members = plan, members
}

// touchesMineLocked reports whether a change of the checks ids may change what the checker
// probes: one of them is given to it now, or was. Called with n.mu held, the plan brought to
// the change.
func (n *Node) touchesMineLocked(ids []string) bool {
	for _, id := range ids {
		if n.givenSet[id] || n.plan == nil || slices.Contains(n.plan.Shard(id, n.cfg.Region), n.cfg.ID) {
			return true
		}
	}
	return false
}

// sameMembership reports whether two memberships list the same checkers in the same order.
func sameMembership(a, b shard.Membership) bool {
	return maps.EqualFunc(a, b, slices.Equal)
}

// membershipLocked returns the live checkers per region as gossip shows them, limited to the
// document's regions (a plan refuses others).
func (n *Node) membershipLocked(regions []string) shard.Membership {
	m := shard.Membership{}
	if n.pool == nil {
		return m
	}
	live := n.pool.Checkers()
	for _, r := range regions {
		if ids, ok := live[r]; ok {
			m[r] = ids
		}
	}
	return m
}

// reassign brings the plan to the current membership and gives the checker its checks. It
// costs nothing that grows with the checks unless something changed: the plan is recomputed
// when the membership moved, the checker given its checks again when the membership moved,
// a configuration change touched them, or it is handing some off. It also gives gossip the
// freshness window in force, which a checker's heartbeats follow.
func (n *Node) reassign() {
	n.mu.Lock()
	if n.settings != nil {
		n.pool.SetFreshnessWindow(freshnessWindow(n.settings))
	}
	if n.plan == nil || n.state == nil {
		n.mu.Unlock()
		return
	}
	members := n.membershipLocked(n.state.Regions())
	moved := !sameMembership(members, n.members)
	if moved {
		if err := n.plan.Update(members); err != nil {
			n.log.Error("node: assignment update", "err", err)
		}
		n.members = members
	}
	if n.chk == nil || !moved && !n.mineChanged && len(n.handoffs) == 0 {
		n.mu.Unlock()
		return
	}
	n.mineChanged = false
	var mine []config.Check
	if n.chk != nil {
		for _, id := range n.plan.ChecksFor(n.cfg.Region, n.cfg.ID) {
			if c, ok := n.state.CheckRef(id); ok {
				mine = append(mine, *c)
			}
		}
		mine = n.handOffLocked(mine, time.Now())
	}
	n.mu.Unlock()
	if n.chk != nil {
		if err := n.chk.SetChecks(mine); err != nil {
			n.log.Warn("node: some assigned checks cannot be probed", "err", err)
		}
	}
}
