package gossip

import "github.com/hashicorp/memberlist"

// delegate is the node as memberlist's Delegate: it receives messages, hands out broadcasts
// and exchanges push/pull state.
type delegate Node

var _ memberlist.Delegate = (*delegate)(nil)

// NodeMeta implements memberlist.Delegate.
func (d *delegate) NodeMeta(limit int) []byte {
	b := encodeMeta(Member{ID: d.cfg.ID, Region: d.cfg.Region, Roles: d.cfg.Roles, Version: d.cfg.Version,
		Leaving: d.leaving.Load()})
	if len(b) > limit {
		return nil
	}
	return b
}

// NotifyMsg implements memberlist.Delegate: a delta or heartbeat from the broadcast queue, or
// a row request or rows over a reliable stream.
func (d *delegate) NotifyMsg(b []byte) {
	n := (*Node)(d)
	k := peekKind(b)
	msg, err := decode(b)
	if err != nil {
		n.m.drop(k, dropReason(err))
		return
	}
	n.m.received.WithLabelValues(msg.kind.String()).Inc()
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
			n.want(msg.delta.checker, []string{msg.delta.checker})
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
			n.want(msg.header.checker, []string{msg.header.checker})
		}
		n.mu.Unlock()
	case kindRequest:
		n.enqueue(job{peer: msg.request.from, addr: msg.request.addr, checkers: msg.request.checkers, answer: true})
	case kindRows:
		n.mu.Lock()
		for _, r := range msg.rows {
			if n.table.applyRow(r, now, false) == outcomeFull {
				n.m.drop(msg.kind, reasonTableFull)
			}
		}
		n.gauges()
		n.mu.Unlock()
	default:
		n.m.drop(msg.kind, reasonRole)
	}
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

// LocalState implements memberlist.Delegate: this checker's own row and the header of every
// row held. Bulk state travels here, over a stream, never through the broadcast queue.
func (d *delegate) LocalState(bool) []byte {
	n := (*Node)(d)
	n.mu.Lock()
	defer n.mu.Unlock()
	s := state{from: n.cfg.ID, digest: n.table.digest()}
	if n.own != nil {
		s.own = n.own.full()
	}
	return encodeState(s)
}

// MergeRemoteState implements memberlist.Delegate: take the peer's own row, note the
// heartbeats it heard, and ask it for the rows it holds newer.
func (d *delegate) MergeRemoteState(b []byte, _ bool) {
	n := (*Node)(d)
	k := peekKind(b)
	msg, err := decode(b)
	if err != nil {
		n.m.drop(k, dropReason(err))
		return
	}
	if msg.kind != kindState {
		n.m.drop(msg.kind, reasonRole)
		return
	}
	n.m.received.WithLabelValues(msg.kind.String()).Inc()
	now := n.cfg.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if msg.state.own != nil {
		if msg.state.own.checker != msg.state.from {
			n.m.drop(msg.kind, reasonMalformed)
			return
		}
		n.table.applyRow(msg.state.own, now, true)
	}
	if behind := n.table.applyDigest(msg.state.digest, now); len(behind) > 0 {
		n.want(msg.state.from, behind)
	}
	n.gauges()
}
