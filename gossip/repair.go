package gossip

import (
	"context"
	"iter"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// job is work for the node's repair worker: ask a peer for rows, or answer a peer's ask.
type job struct {
	peer    string
	addr    string // the asker's address, for an answer
	asks    []ask
	answer  bool
	version byte // of the ask, for an answer
}

// repair asks again for the rows this node still lacks: rows behind the changes heard of, and
// the rows of live checkers never heard of at all. An ask that was lost, that its peer could not
// answer, or that found the row's checker not yet a member here is retried within
// askAgainAfter plus repairInterval, not left to a heartbeat that may or may not arrive next,
// nor to push/pull. Rows of checkers that are not members are never created here.
func (n *Pool) repair() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.table.expirePages(n.cfg.Now())
	ids := n.table.lacking(maxRowsPerAsk)
	for id, m := range n.members {
		if len(ids) >= maxRowsPerAsk {
			break
		}
		if m.Roles.Has(RoleChecker) && !m.Leaving && id != n.cfg.ID && n.table.rows[id] == nil {
			ids = append(ids, id)
		}
	}
	// The checkers that are members are asked for their own rows, which they always hold
	// complete; the rest go in one ask to any live peer. So do the rows already asked for
	// that are still missing, and those of checkers a recent send failed to reach: behind a
	// cut link, a dial waits for memberlist's TCP timeout, and the row comes relayed (reach.go).
	var rest []string
	asked := 0
	now := n.cfg.Now()
	for _, id := range ids {
		_, ok := n.members[id]
		if ok && asked < repairFanout && !n.askedInVain(id, now) {
			n.want(id, []string{id})
			asked++
		} else {
			rest = append(rest, id)
		}
	}
	if len(rest) > 0 {
		n.want("", rest)
	}
}

// askedInVain reports whether checker's own row is better asked of other peers than of
// checker: an ask for it within 2*askAgainAfter did not bring it (checker could not answer,
// or refused the ask: a node of wire version 1 drops a version 2 ask, and this node learns a
// peer's version only from its bulk messages), or a recent send to checker failed. Called
// with n.mu held.
func (n *Pool) askedInVain(checker string, now time.Time) bool {
	return now.Sub(n.requested[checker]) < 2*askAgainAfter || n.unreachedLocked(checker, now)
}

// askOwner asks for the row of checker, which a delta or heartbeat just showed this node to
// be behind on: of checker itself, or of other peers when asking it did not help lately. A
// heartbeat every askAgainAfter or faster would otherwise send every ask to checker and none
// elsewhere, for as long as checker cannot answer: repair's ask of other peers would find
// the row always just asked for. Called with n.mu held.
func (n *Pool) askOwner(checker string) {
	if n.askedInVain(checker, n.cfg.Now()) {
		n.want("", []string{checker})
		return
	}
	n.want(checker, []string{checker})
}

// want asks peer for the rows of checkers that this node is behind on, at most once per
// askAgainAfter per row and never while a row's pages arrive, saying what it holds of each.
// Called with n.mu held.
func (n *Pool) want(peer string, checkers []string) {
	now := n.cfg.Now()
	var asks []ask
	for _, c := range checkers {
		if c == n.cfg.ID || now.Sub(n.requested[c]) < askAgainAfter || len(asks) == maxRowsPerAsk ||
			n.table.assembling(c, now) {
			continue
		}
		n.requested[c] = now
		gen, seq, _ := n.table.holds(c)
		asks = append(asks, ask{checker: c, gen: gen, seq: seq})
	}
	if len(asks) > 0 {
		n.m.repairs.Add(float64(len(asks)))
		n.enqueue(job{peer: peer, asks: asks})
	}
}

func (n *Pool) enqueue(j job) {
	select {
	case n.work <- j:
	default:
		n.m.drop(j.kind(), reasonQueueFull)
	}
}

// worker asks for and sends row repairs over memberlist's reliable stream until ctx ends. A
// send to a peer behind a cut link waits for memberlist's TCP timeout, so sends to the node's
// own region and sends to other regions are queued apart, each at most maxSends at a time
// (reach.go): dials into a cut between regions never hold up a repair within the region.
// When sa-east was cut off, its location's slots could all hold such dials for seconds after
// the cut, and a row of its own region's checker that one missed delta left behind waited
// for them; the location went on counting that checker's report from before the cut
// (TestRegionRepairNotHeldByCutDials; with near.go's heartbeats, which show such a gap at
// once, sa-east's location kept the far addresses 8.8 s after the cut in 1 of 10 runs of
// `vigil sim -real isolated`, 5.0 s in the others).
func (n *Pool) worker(ctx context.Context) {
	local, remote := make(chan outgoing, workQueue), make(chan outgoing, workQueue)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { n.sendLoop(ctx, local) })
	wg.Go(func() { n.sendLoop(ctx, remote) })
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-n.work:
			for _, to := range n.targets(j) {
				q := remote
				if n.inRegion(to.Name) {
					q = local
				}
				select {
				case q <- outgoing{to: to, job: j}:
				default:
					n.m.drop(j.kind(), reasonQueueFull)
				}
			}
		}
	}
}

// outgoing is a job bound for one peer.
type outgoing struct {
	to  *memberlist.Node
	job job
}

// kind is the kind of message a job sends.
func (j job) kind() kind {
	if j.answer {
		return kindRows
	}
	return kindRequest
}

// sendLoop sends what comes on q, at most maxSends at a time, until ctx ends.
func (n *Pool) sendLoop(ctx context.Context, q <-chan outgoing) {
	s := newSender(maxSends)
	defer s.wait()
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-q:
			if !n.dispatch(ctx, s, o.to, o.job) {
				return
			}
		}
	}
}

// inRegion reports whether peer is a member of this node's region.
func (n *Pool) inRegion(peer string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	m, ok := n.members[peer]
	return ok && m.Region == n.cfg.Region
}

// dispatch starts sending job j to peer to, and reports false if ctx ended first.
func (n *Pool) dispatch(ctx context.Context, s *sender, to *memberlist.Node, j job) bool {
	var msgs iter.Seq[[]byte]
	done := func() {}
	if j.answer {
		if msgs, done = n.answer(j.peer, j.asks, j.version); msgs == nil {
			return true
		}
	} else {
		msgs = slices.Values([][]byte{encodeRequest(request{from: n.cfg.ID, addr: n.addr, asks: j.asks}, n.versionFor(to.Name))})
	}
	n.sending(to.Name, true)
	if !s.start(ctx, func() { defer done(); n.send(to, msgs, j) }) {
		n.sending(to.Name, false)
		done()
		return false
	}
	return true
}

// versionFor returns the wire version to ask peer in: version 1 for a peer that spoke only
// version 1 lately (a node not yet upgraded refuses version 2), else version 2.
func (n *Pool) versionFor(peer string) byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cfg.legacySync || n.v1peers[peer] {
		return wireV1
	}
	return wireV2
}

// spoke records the wire version of a bulk message from peer. Called with n.mu held.
func (n *Pool) spoke(peer string, v byte) {
	switch {
	case v == wireV2:
		delete(n.v1peers, peer)
	case len(n.v1peers) < n.cfg.MaxKnownPeers:
		n.v1peers[peer] = true
	}
}

// relayedAsks is how many peers an ask that no checker answers itself goes to. Such rows are
// those a node missed behind a cut link, and its own region's peers, behind the same cut,
// miss them too: asked of one peer, picked among eu-1, eu-2 and sa-2 at sa-1 during the us-sa
// cut, sa-1 held a reachable us checker stale past the freshness window in 2 of 135 runs of
// TestRelayedCheckersStayFresh; asked of two, in other regions first, in 2 of 1,200. Only
// an ask for rows the node holds goes to two: it is answered with the changes since
// (sync.go), while a row not held is answered whole, at a million checks in pages of tens
// of megabytes.
const relayedAsks = 2

// targets returns the nodes a job goes to: its peer when that is a live member here that a
// recent send did not fail to reach. Otherwise an answer goes to the address the asker gave
// (memberlist reports a new member alive to some nodes seconds after others, up to a
// push/pull later), and an ask goes to relayedAsks other live members (one, for rows not
// held), preferring those reached (a row's checker is heard of through relays before it is
// a member here, and behind a cut link its row comes relayed) and then those of regions
// other than this node's and the ones already picked, since every peer that holds the row
// complete can answer.
func (n *Pool) targets(j job) []*memberlist.Node {
	members := n.ml.Members() // before n.mu: memberlist calls into the node with its locks held
	now := n.cfg.Now()
	var others, reached []*memberlist.Node
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range members {
		if m.State != memberlist.StateAlive || m.Name == n.cfg.ID {
			continue
		}
		cut := n.unreachedLocked(m.Name, now) || n.inflight[m.Name]
		if m.Name == j.peer && (j.answer || !cut) {
			return []*memberlist.Node{m}
		}
		others = append(others, m)
		if !cut {
			reached = append(reached, m)
		}
	}
	if j.answer {
		if to := nodeAt(j.peer, j.addr); to != nil {
			return []*memberlist.Node{to}
		}
		return nil
	}
	if len(reached) > 0 {
		others = reached
	}
	k := relayedAsks
	for _, a := range j.asks {
		if a.gen == 0 && a.seq == 0 {
			k = 1
		}
	}
	n.rng.Shuffle(len(others), func(a, b int) { others[a], others[b] = others[b], others[a] })
	regions := map[string]bool{n.cfg.Region: true}
	var out []*memberlist.Node
	for _, m := range others {
		if r := n.members[m.Name].Region; !regions[r] && len(out) < k {
			regions[r] = true
			out = append(out, m)
		}
	}
	for _, m := range others {
		if len(out) < k && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// nodeAt returns a memberlist node for id at addr, an IP and port, or nil when addr is not one.
func nodeAt(id, addr string) *memberlist.Node {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	p, err := strconv.ParseUint(port, 10, 16)
	if ip == nil || err != nil || p == 0 {
		return nil
	}
	return &memberlist.Node{Name: id, Addr: ip, Port: uint16(p)}
}
