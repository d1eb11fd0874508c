package gossip

import (
	"context"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Row repairs across cut links. A location asks a checker for its own row directly, and in a
// non-transitive partition (us-sa cut, eu hearing both) that checker is alive for memberlist
// (eu acks its probes) while a dial to it waits for memberlist's TCP timeout (10s at LAN) and
// fails. With one send at a time, every repair of the location waited behind such dials and
// rows that missed one delta stayed incomplete, so stale, for minutes (TestRelayedCheckersStayFresh:
// sa's location held us's checkers stale for 80 to 113s of a 2-minute cut). So sends run
// side by side, and a peer that a send failed to reach is asked no more for a while: its row
// is asked of peers that hold it relayed.
const (
	maxSends     = 4                // repair sends in flight at once, within the region and to others each
	unreachedFor = 30 * time.Second // a peer a send failed to reach is not asked directly for this long
)

// sender runs up to a fixed number of sends at once.
type sender struct {
	slots chan struct{}
	wg    sync.WaitGroup
}

func newSender(n int) *sender { return &sender{slots: make(chan struct{}, n)} }

// start runs f once a slot is free, and reports false if ctx ended first.
func (s *sender) start(ctx context.Context, f func()) bool {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	s.wg.Add(1)
	go func() {
		defer func() {
			<-s.slots
			s.wg.Done()
		}()
		f()
	}()
	return true
}

// wait waits for the sends in flight; each ends within memberlist's TCP timeout.
func (s *sender) wait() { s.wg.Wait() }

// sending marks a send to peer in flight: until it ends, no ask goes to the same peer, as it
// may be a dial into a cut link.
func (n *Pool) sending(peer string, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if on {
		n.inflight[peer] = true
	} else {
		delete(n.inflight, peer)
	}
}

// send sends the messages of one repair in order, stopping at the first that fails, and
// records whether its peer was reached.
func (n *Pool) send(to *memberlist.Node, msgs iter.Seq[[]byte], j job) {
	var err error
	sent := 0
	for msg := range msgs {
		if err = n.ml.SendReliable(to, msg); err != nil {
			break
		}
		sent++
	}
	n.mu.Lock()
	delete(n.inflight, to.Name)
	if err != nil {
		n.unreached[to.Name] = n.cfg.Now()
	} else {
		delete(n.unreached, to.Name)
	}
	n.mu.Unlock()
	if err != nil {
		n.log.Debug("row repair send failed", "peer", to.Name, "answer", j.answer, "sent", sent, "err", err)
	}
}

// unreachedLocked reports whether a send to peer failed within unreachedFor. Called with n.mu
// held.
func (n *Pool) unreachedLocked(peer string, now time.Time) bool {
	t, ok := n.unreached[peer]
	return ok && now.Sub(t) < unreachedFor
}

// A node that is alone in the pool while others talk to it: a location restarted on its
// address during a cut, whose seeds are across the cut. Its region's checkers still know it
// and send it their heartbeats, but it is a member of nothing: it has no peer to ask for their
// rows, so it counts none of them (on real processes it served every region's address, failing
// open, for the whole cut), and memberlist lets it in only at a push/pull, 30s apart at LAN.
// So the transport remembers the last few addresses packets came from, and a node alone joins
// them (TestRestartedInCutRegion). A packet is remembered before memberlist decrypts it, so a
// stranger can make a lonely node dial it: one join at a time, at most heardAddrs addresses
// each, and the join itself is encrypted like any other.
const heardAddrs = 4

// heardFrom is the last few distinct addresses packets came from, newest last.
type heardFrom struct {
	mu    sync.Mutex
	addrs []string
}

func (h *heardFrom) add(addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := slices.Index(h.addrs, addr); i >= 0 {
		h.addrs = slices.Delete(h.addrs, i, i+1)
	} else if len(h.addrs) == heardAddrs {
		h.addrs = h.addrs[1:]
	}
	h.addrs = append(h.addrs, addr)
}

func (h *heardFrom) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.addrs)
}

// joinHeard joins the addresses the node heard from while it is alone, one join at a time in
// the background (a join dials, and a dial may wait for memberlist's TCP timeout).
func (n *Pool) joinHeard(wg *sync.WaitGroup) {
	n.mu.Lock()
	alone := len(n.members) <= 1
	n.mu.Unlock()
	if !alone || !n.joining.CompareAndSwap(false, true) {
		return
	}
	addrs := slices.DeleteFunc(n.transport.heard.list(), func(a string) bool { return a == n.addr })
	if len(addrs) == 0 {
		n.joining.Store(false)
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer n.joining.Store(false)
		slices.Reverse(addrs) // the newest first
		for _, a := range addrs {
			if k, err := n.ml.Join([]string{a}); err == nil && k > 0 {
				n.log.Info("joined a peer that talked to this lonely node", "peer", a)
				return
			}
		}
	}()
}
