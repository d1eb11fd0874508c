package gossip

import (
	"slices"

	"github.com/hashicorp/memberlist"
)

// delegate is the node as memberlist's Delegate: it receives messages, hands out broadcasts
// and exchanges push/pull state.
type delegate Pool

var _ memberlist.Delegate = (*delegate)(nil)

// NodeMeta implements memberlist.Delegate.
func (d *delegate) NodeMeta(limit int) []byte {
	b := encodeMeta(Member{ID: d.cfg.ID, Region: d.cfg.Region, Roles: d.cfg.Roles, Version: d.cfg.Version,
		HTTP: d.cfg.HTTPAddr, Leaving: d.leaving.Load()})
	if len(b) > limit {
		return nil
	}
	return b
}

// NotifyMsg implements memberlist.Delegate: a delta or heartbeat from the broadcast queue, or
// a row request, rows or a page of a row over a reliable stream.
func (d *delegate) NotifyMsg(b []byte) {
	n := (*Pool)(d)
	if len(b) > 0 && b[0] == keyringMagic {
		n.keyringMessage(b)
		return
	}
	msg, ok := n.decode(b)
	if !ok {
		return
	}
	now := n.cfg.Now()
	switch msg.kind {
	case kindDelta:
		n.mu.Lock()
		switch n.table.applyDelta(msg.delta, now) {
		case outcomeNew:
			n.queueDelta(msg.delta.header, msg.delta.check, append([]byte(nil), b...))
		case outcomeFull:
			n.m.drop(msg.kind, reasonTableFull)
		}
		if n.table.behind(msg.delta.checker) {
			n.askOwner(msg.delta.checker)
		}
		n.gauges()
		n.mu.Unlock()
	case kindHeartbeat:
		n.mu.Lock()
		switch n.table.applyHeartbeat(msg.header, now) {
		case outcomeNew:
			n.beats.QueueBroadcast(newBroadcast("h/"+msg.header.checker, append([]byte(nil), b...)))
		case outcomeFull:
			n.m.drop(msg.kind, reasonTableFull)
		}
		if n.table.behind(msg.header.checker) {
			n.askOwner(msg.header.checker)
		}
		n.mu.Unlock()
	case kindRequest:
		n.mu.Lock()
		n.spoke(msg.request.from, msg.version)
		n.mu.Unlock()
		n.enqueue(job{peer: msg.request.from, addr: msg.request.addr, asks: msg.request.asks, answer: true,
			version: msg.version})
	case kindRows:
		n.mu.Lock()
		for _, r := range msg.rows {
			if n.table.applyRow(r, now, false) == outcomeFull {
				n.m.drop(msg.kind, reasonTableFull)
			}
		}
		for _, s := range msg.since {
			if n.table.applySince(s, now) == outcomeFull {
				n.m.drop(msg.kind, reasonTableFull)
			}
		}
		n.gauges()
		n.mu.Unlock()
	case kindPage:
		n.mu.Lock()
		if n.table.applyPage(msg.page, now) == outcomeFull {
			n.m.drop(msg.kind, reasonTableFull)
		}
		n.gauges()
		n.mu.Unlock()
	default:
		n.m.drop(msg.kind, reasonRole)
	}
}

// decode decodes a message, counting it as received, or as dropped with its reason. A node
// in legacySync refuses version 2 as nodes before it did: an unknown version.
func (n *Pool) decode(b []byte) (message, bool) {
	if n.cfg.legacySync && len(b) > 0 && b[0] != wireV1 {
		n.m.drop(0, reasonVersion)
		return message{}, false
	}
	msg, err := decode(b)
	if err != nil {
		n.m.drop(peekKind(b), dropReason(err))
		return message{}, false
	}
	n.m.received.WithLabelValues(msg.kind.String()).Inc()
	if msg.version == wireV1 && msg.kind.bulk() {
		n.m.receivedV1.WithLabelValues(msg.kind.String()).Inc()
	}
	return msg, true
}

// GetBroadcasts implements memberlist.Delegate: deltas first, heartbeats in the room left.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	out := d.deltas.GetBroadcasts(overhead, limit)
	used := 0
	for _, b := range out {
		used += overhead + len(b)
	}
	return append(out, d.beats.GetBroadcasts(overhead, limit-used)...)
}

// LocalState implements memberlist.Delegate: the header of this checker's own row and of
// every row held, never cells: a peer behind on a row asks for what it lacks (sync.go). Bulk
// state travels here, over a stream, never through the broadcast queue.
func (d *delegate) LocalState(bool) []byte {
	n := (*Pool)(d)
	n.mu.Lock()
	defer n.mu.Unlock()
	s := state{from: n.cfg.ID, digest: n.table.digest()}
	if n.cfg.legacySync {
		if n.own != nil {
			s.row = n.own.full()
		}
		return encodeState(s, wireV1)
	}
	if n.own != nil {
		h := n.own.header()
		s.own = &h
	}
	return encodeState(s, wireV2)
}

// MergeRemoteState implements memberlist.Delegate: take the header of the peer's own row as a
// timely word of that checker (a whole row from a node of version 1), note the heartbeats it
// heard, and ask it for the rows it holds newer.
func (d *delegate) MergeRemoteState(b []byte, _ bool) {
	n := (*Pool)(d)
	msg, ok := n.decode(b)
	if !ok {
		return
	}
	if msg.kind != kindState {
		n.m.drop(msg.kind, reasonRole)
		return
	}
	s := msg.state
	now := n.cfg.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if s.own != nil && s.own.checker != s.from || s.row != nil && s.row.checker != s.from {
		n.m.drop(msg.kind, reasonMalformed)
		return
	}
	n.spoke(s.from, msg.version)
	var behind []string
	switch {
	case s.own != nil:
		if _, lacks := n.table.applyOwnHeader(*s.own, now); lacks {
			behind = append(behind, s.from)
		}
	case s.row != nil:
		n.table.applyRow(s.row, now, true)
	}
	for _, c := range n.table.applyDigest(s.digest, now) {
		if !slices.Contains(behind, c) {
			behind = append(behind, c)
		}
	}
	if len(behind) > 0 {
		n.want(s.from, behind)
	}
	n.gauges()
}
