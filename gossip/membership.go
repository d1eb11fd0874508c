package gossip

import (
	"sort"

	"github.com/hashicorp/memberlist"
)

// EventKind is what happened to a member.
type EventKind uint8

// The membership events.
const (
	// MemberJoined: the member is alive in the pool (first seen, or back after a failure).
	MemberJoined EventKind = iota + 1
	// MemberLeft: the member left gracefully, or was declared dead and (a checker) its
	// progress stopped arriving here (liveness.go).
	MemberLeft
	// MemberUpdated: the member's metadata changed.
	MemberUpdated
)

// String names the event kind.
func (k EventKind) String() string {
	switch k {
	case MemberJoined:
		return "joined"
	case MemberLeft:
		return "left"
	case MemberUpdated:
		return "updated"
	}
	return "unknown"
}

// MemberEvent is one change of the pool's membership, for re-assignment and for telling a
// location which checkers to expect.
type MemberEvent struct {
	// Kind is what happened.
	Kind EventKind
	// Member is the member it happened to.
	Member Member
	// Dead is set on MemberLeft when the member failed rather than left.
	Dead bool
}

// Membership is what assignment and locations need of the pool: the live checkers of each
// region. *Node implements it; events arrive through Config.OnMembership.
type Membership interface {
	Checkers() map[string][]string
}

var _ Membership = (*Pool)(nil)

// Members returns the live members of the pool, this node included, sorted by id.
func (n *Pool) Members() []Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Member, 0, len(n.members))
	for _, m := range n.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Checkers returns the ids of the live checkers of each region, sorted: whom a location
// expects reports from, and what assignment shards over. Live is memberlist's view, a hint:
// in a non-transitive partition memberlist may call a checker dead whose reports still arrive
// relayed, and those reports count all the same (a location counts progress, not members).
func (n *Pool) Checkers() map[string][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string][]string{}
	for _, m := range n.members {
		if m.Roles.Has(RoleChecker) {
			out[m.Region] = append(out[m.Region], m.ID)
		}
	}
	for _, m := range n.lingering {
		out[m.Region] = append(out[m.Region], m.ID)
	}
	for _, ids := range out {
		sort.Strings(ids)
	}
	return out
}

// events is the node as memberlist's EventDelegate. memberlist calls it with its own locks
// held: it takes only the node's lock and never calls back into memberlist.
type events Pool

var _ memberlist.EventDelegate = (*events)(nil)

// NotifyJoin implements memberlist.EventDelegate.
func (e *events) NotifyJoin(node *memberlist.Node) { e.update(node, MemberJoined) }

// NotifyUpdate implements memberlist.EventDelegate.
func (e *events) NotifyUpdate(node *memberlist.Node) { e.update(node, MemberUpdated) }

// NotifyLeave implements memberlist.EventDelegate.
func (e *events) NotifyLeave(node *memberlist.Node) {
	n := (*Pool)(e)
	n.mu.Lock()
	m, ok := n.members[node.Name]
	if !ok {
		n.mu.Unlock()
		return
	}
	delete(n.members, node.Name)
	// memberlist's NotifyLeave does not say whether the node left or died: the metadata does.
	dead := !m.Leaving && node.State != memberlist.StateLeft
	if !dead {
		delete(n.known, node.Name) // it said goodbye: nothing to rejoin
	}
	n.alive.Store(int64(len(n.members)))
	n.memberGauges()
	n.findNearLocked()
	if dead && n.progressingLocked(m, n.cfg.Now()) {
		n.lingering[m.ID] = m
		n.mu.Unlock()
		n.log.Info("member declared dead, but its progress still arrives: still live for assignment", "member", m.ID, "region", m.Region)
		return
	}
	n.mu.Unlock()
	n.log.Info("member left", "member", m.ID, "region", m.Region, "dead", dead)
	if n.cfg.OnMembership != nil {
		n.cfg.OnMembership(MemberEvent{Kind: MemberLeft, Member: m, Dead: dead})
	}
}

func (e *events) update(node *memberlist.Node, kind EventKind) {
	n := (*Pool)(e)
	m, err := decodeMeta(node.Meta)
	if err != nil || m.ID != node.Name {
		n.log.Warn("member with bad metadata ignored", "member", node.Name, "err", err)
		n.m.drop(0, reasonMalformed)
		return
	}
	m.Addr = node.Address()
	n.mu.Lock()
	if _, ok := n.members[m.ID]; !ok {
		kind = MemberJoined
	}
	delete(n.lingering, m.ID)
	n.members[m.ID] = m
	n.remember(m)
	n.table.setRegion(m.ID, m.Region)
	n.alive.Store(int64(len(n.members)))
	n.memberGauges()
	n.findNearLocked()
	n.mu.Unlock()
	if kind == MemberJoined && m.ID != n.cfg.ID {
		n.log.Info("member joined", "member", m.ID, "region", m.Region, "roles", m.Roles.String())
		select {
		case n.joined <- struct{}{}:
		default:
		}
	}
	if n.cfg.OnMembership != nil {
		n.cfg.OnMembership(MemberEvent{Kind: kind, Member: m})
	}
}

// remember records a peer for rejoining, forgetting the longest unseen beyond the bound.
// Called with n.mu held.
func (n *Pool) remember(m Member) {
	if m.ID == n.cfg.ID {
		return
	}
	n.known[m.ID] = knownPeer{addr: m.Addr, lastSeen: n.cfg.Now()}
	if len(n.known) <= n.cfg.MaxKnownPeers {
		return
	}
	oldest := ""
	for id, k := range n.known {
		if _, alive := n.members[id]; alive {
			continue
		}
		if oldest == "" || k.lastSeen.Before(n.known[oldest].lastSeen) {
			oldest = id
		}
	}
	if oldest != "" {
		delete(n.known, oldest)
	}
}

// memberGauges recounts the live members per region. Called with n.mu held.
func (n *Pool) memberGauges() {
	n.m.members.Reset()
	for _, m := range n.members {
		n.m.members.WithLabelValues(m.Region).Inc()
	}
}
