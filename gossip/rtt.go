package gossip

import (
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// rttStale is how long a member's round-trip time counts after its last ping.
const rttStale = 2 * time.Minute

// rttWindow is how many of a member's latest pings its round-trip time is the least of.
const rttWindow = 5

// rttTable holds the round-trip time memberlist measured to each member by its pings, as the
// least of its latest rttWindow pings: what a location orders regions by (nearest first).
// Waiting in queues (a busy CPU on either side, a full socket buffer) only ever adds to a
// ping's time, so the least of a few is the path's own and a burst of slow pings does not make
// a far region look nearer; a path that does get slower shows after rttWindow pings. It holds
// one entry per member, and drops those of nodes that are no longer members when it is read.
type rttTable struct {
	mu   sync.Mutex
	byID map[string]rttSample
}

type rttSample struct {
	recent [rttWindow]time.Duration // the latest pings, a ring; zero: not yet filled
	next   int                      // where the next ping goes in recent
	at     time.Time                // the latest ping's time
}

// least returns the least of the member's latest pings.
func (s *rttSample) least() time.Duration {
	var m time.Duration
	for _, d := range s.recent {
		if d > 0 && (m == 0 || d < m) {
			m = d
		}
	}
	return m
}

// pinger is the Node as memberlist's PingDelegate.
type pinger Pool

var _ memberlist.PingDelegate = (*pinger)(nil)

// AckPayload implements memberlist.PingDelegate: acks carry nothing more.
func (*pinger) AckPayload() []byte { return nil }

// NotifyPingComplete implements memberlist.PingDelegate: it records the ping's round trip.
func (p *pinger) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, _ []byte) {
	if other == nil || rtt <= 0 {
		return
	}
	t := &(*Pool)(p).rtt
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]rttSample{}
	}
	s := t.byID[other.Name]
	s.recent[s.next] = rtt
	s.next = (s.next + 1) % rttWindow
	s.at = time.Now()
	t.byID[other.Name] = s
}

// RegionRTTs returns, for each region with members measured within the last two minutes,
// the median of their round-trip times from this node; the node's own region included.
func (n *Pool) RegionRTTs(now time.Time) map[string]time.Duration {
	members := n.Members()
	region := make(map[string]string, len(members))
	for _, m := range members {
		region[m.ID] = m.Region
	}
	byRegion := map[string][]time.Duration{}
	t := &n.rtt
	t.mu.Lock()
	for id, s := range t.byID {
		r, ok := region[id]
		if !ok {
			delete(t.byID, id)
			continue
		}
		if now.Sub(s.at) <= rttStale {
			byRegion[r] = append(byRegion[r], s.least())
		}
	}
	t.mu.Unlock()
	out := make(map[string]time.Duration, len(byRegion))
	for r, ds := range byRegion {
		slices.Sort(ds)
		out[r] = ds[len(ds)/2]
	}
	return out
}
