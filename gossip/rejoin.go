package gossip

import "sort"

// rejoin joins a few known peers that are not alive, or the seeds when alone: memberlist
// alone does not heal a partition that outlasts its memory of the dead.
func (n *Pool) rejoin() {
	n.mu.Lock()
	var addrs []string
	for id, k := range n.known {
		if _, alive := n.members[id]; !alive && id != n.cfg.ID {
			addrs = append(addrs, k.addr)
		}
	}
	alone := len(n.members) <= 1
	if alone {
		addrs = append(addrs, n.cfg.Seeds...)
	}
	sort.Strings(addrs)
	n.rng.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	n.mu.Unlock()
	if len(addrs) > rejoinFanout {
		addrs = addrs[:rejoinFanout]
	}
	if len(addrs) == 0 {
		if !alone {
			n.noteJoined()
		}
		return
	}
	n.m.rejoins.Add(float64(len(addrs)))
	k, err := n.ml.Join(addrs)
	if err != nil {
		n.log.Debug("rejoin", "reached", k, "tried", len(addrs), "err", err)
	}
	switch {
	case alone && k == 0 && err != nil && len(n.cfg.Seeds) > 0:
		// Alone with seeds to join, and none reached: say so, not only at debug.
		n.noteJoinFailure(addrs, err)
	case k > 0 || !alone:
		n.noteJoined()
	}
}

// catchUp pushes and pulls the whole state with one random live member. A node that has just
// joined knows the pool as its seed knew it at that instant: the members that joined at the
// same moment through other seeds reach it only by broadcasts that may have run out before
// it was known, or by memberlist's own push/pull, every 15s or more (vigil sim fleet-growth
// saw new checkers miss each other for up to 20s). So a joiner catches up a few times.
func (n *Pool) catchUp() {
	n.mu.Lock()
	var addrs []string
	for id, m := range n.members {
		if id != n.cfg.ID {
			addrs = append(addrs, m.Addr)
		}
	}
	sort.Strings(addrs)
	var addr string
	if len(addrs) > 0 {
		addr = addrs[n.rng.IntN(len(addrs))]
	}
	n.mu.Unlock()
	if addr == "" {
		return
	}
	if _, err := n.ml.Join([]string{addr}); err != nil {
		n.log.Debug("catch up", "peer", addr, "err", err)
	}
}

// forget drops rows that stopped changing RowTTL ago whose checkers are gone, peers not
// alive for ForgetPeersAfter, and old bookkeeping.
func (n *Pool) forget() {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.cfg.Now()
	n.table.forget(now.Add(-n.cfg.RowTTL), func(id string) bool {
		_, ok := n.members[id]
		return ok || id == n.cfg.ID
	})
	for id, k := range n.known {
		if _, alive := n.members[id]; alive {
			k.lastSeen = now
			n.known[id] = k
		} else if now.Sub(k.lastSeen) > n.cfg.ForgetPeersAfter {
			delete(n.known, id)
		}
	}
	for c, t := range n.requested {
		if now.Sub(t) > askAgainAfter {
			delete(n.requested, c)
		}
	}
	for k, t := range n.paged {
		if now.Sub(t) >= pageIdle {
			delete(n.paged, k)
		}
	}
	for id := range n.v1peers {
		if _, ok := n.members[id]; !ok {
			delete(n.v1peers, id)
		}
	}
	for id, t := range n.unreached {
		if now.Sub(t) > unreachedFor {
			delete(n.unreached, id)
		}
	}
	if n.beats.NumQueued() > n.cfg.MaxRows {
		n.beats.Prune(n.cfg.MaxRows)
	}
	n.gauges()
}
