package gossip

import (
	"slices"

	"github.com/hashicorp/memberlist"
)

// A checker sends each heartbeat straight to the locations of its own region, besides
// gossiping it. memberlist gossips to three random members every round and goes on
// gossiping to members across a cut, suspect and then dead, for 30 s at its LAN profile
// (GossipToTheDeadTime). When a region is cut off, most of its checkers' transmissions go
// to members out of reach: sa-east's location, hearing its own two checkers through them
// alone, missed enough of one's heartbeats that it went on counting that checker's report
// from before the cut, and kept serving the other regions' addresses up to 7.8 s after the
// cut (RESILIENCE.md). A region's own locations are the ones a cut between regions never
// hides from its checkers. A heartbeat is one small packet; the direct copies cost each
// checker at most maxNearLocations packets a beat, whatever the size of the pool.
const maxNearLocations = 8

// findNearLocked recomputes the locations of this node's region that a checker sends its
// heartbeats to: sorted by id, at most maxNearLocations, none for a node that is no checker.
// Called with n.mu held, on every change of membership.
func (n *Pool) findNearLocked() {
	n.nearLocations = nil // a new list each time: sendNear may be reading the last one
	if !n.cfg.Roles.Has(RoleChecker) {
		return
	}
	var ids []string
	for id, m := range n.members {
		if id != n.cfg.ID && m.Region == n.cfg.Region && m.Roles.Has(RoleLocation) && !m.Leaving {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var near []*memberlist.Node
	for _, id := range ids[:min(len(ids), maxNearLocations)] {
		if to := nodeAt(id, n.members[id].Addr); to != nil {
			near = append(near, to)
		}
	}
	n.nearLocations = near
}

// sendNear sends msg to each of the given locations, best effort (a packet, like gossip).
// Called without n.mu: memberlist is not called with the node's lock held.
func (n *Pool) sendNear(near []*memberlist.Node, msg []byte) {
	if n.halted.Load() {
		return
	}
	for _, to := range near {
		if err := n.ml.SendBestEffort(to, msg); err != nil {
			n.log.Debug("heartbeat to a location of the region not sent", "location", to.Name, "err", err)
		}
	}
}
