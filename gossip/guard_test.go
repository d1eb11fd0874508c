package gossip

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/internal/netkey"
)

// addrConn is one end of a pipe that claims a remote address.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

func testGuard(t *testing.T, limits InboundLimits) (*guard, *metrics, chan *guardedConn) {
	t.Helper()
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Inbound: limits, Now: time.Now}
	g := newGuard(&cfg, nil, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	started := make(chan *guardedConn, 100)
	g.start = func(gc *guardedConn) { started <- gc }
	return g, m, started
}

// dial makes a stream from host, with the other end closed when the test ends.
func dial(t *testing.T, host string) net.Conn {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return addrConn{Conn: a, remote: &net.TCPAddr{IP: net.ParseIP(host), Port: 40000}}
}

// Streams of one source network over its limit wait for a slot instead of being refused (a
// checker's pages come back to back, and the checkers of one host are one source), and take
// the slots as they free, oldest first; past the queue's bound they are refused, and so is a
// stream that waited too long; another network's streams are not held up. The streams come
// from different addresses of one /24, which share its allowance.
func TestGuardQueuesStreamsOverTheSourceLimit(t *testing.T) {
	g, m, started := testGuard(t, InboundLimits{MaxStreams: 64, MaxStreamsPerSource: 2, StreamReadTimeout: 50 * time.Millisecond})
	var open []*guardedConn
	for i := range 2 {
		gc := g.take(dial(t, fmt.Sprintf("10.0.1.%d", 1+i)))
		if gc == nil {
			t.Fatal("a stream under the limit was not admitted")
		}
		open = append(open, gc)
	}
	queue := queuedPerSlot * 2
	for i := range queue {
		if gc := g.take(dial(t, fmt.Sprintf("10.0.1.%d", 10+i))); gc != nil {
			t.Fatalf("stream %d over the limit admitted at once, want it to wait", i)
		}
	}
	if gc := g.take(dial(t, "10.0.2.1")); gc == nil {
		t.Fatal("another network's stream was held up")
	}
	refused := func(reason string) float64 { return testutil.ToFloat64(m.refused.WithLabelValues("stream", reason)) }
	if g.take(dial(t, "10.0.1.200")); refused(refusedSource) != 1 {
		t.Fatalf("a stream past the queue: refused %v, want 1", refused(refusedSource))
	}
	// A slot frees: the oldest waiting stream takes it.
	open[0].Close()
	select {
	case gc := <-started:
		open[0] = gc
	case <-time.After(time.Second):
		t.Fatal("no waiting stream took the slot that freed")
	}
	if len(started) != 0 || g.queued != queue-1 {
		t.Fatalf("%d started, %d waiting; want 1 started, %d waiting", len(started)+1, g.queued, queue-1)
	}
	// The rest waited longer than two read timeouts: refused when a slot frees.
	time.Sleep(2*g.limits.StreamReadTimeout + 10*time.Millisecond)
	open[1].Close()
	if len(started) != 0 || refused(refusedWait) != float64(queue-1) || g.queued != 0 {
		t.Fatalf("after waiting too long: %d started, %v refused, %d waiting; want 0, %d, 0", len(started), refused(refusedWait), g.queued, queue-1)
	}
	open[0].Close()
	if n := g.perSource[netkey.OfString("10.0.1.1")]; g.streams != 1 || n != 0 {
		t.Fatalf("slots held: %d in all, %d by 10.0.1.0/24; want 1 and 0", g.streams, n)
	}
}

// When the total limit is reached, a source's streams wait too, and take the slots another
// source frees.
func TestGuardQueuesStreamsOverTheTotalLimit(t *testing.T) {
	g, _, started := testGuard(t, InboundLimits{MaxStreams: 2, MaxStreamsPerSource: 2, StreamReadTimeout: time.Second})
	a := g.take(dial(t, "10.0.1.1"))
	b := g.take(dial(t, "10.0.1.2"))
	if a == nil || b == nil {
		t.Fatal("streams under the limits were not admitted")
	}
	if g.take(dial(t, "10.0.2.1")) != nil {
		t.Fatal("a stream over the total limit admitted at once")
	}
	a.Close()
	select {
	case gc := <-started:
		if gc.src != netkey.OfString("10.0.2.1") {
			t.Fatalf("slot given to %s, want 10.0.2.0/24", gc.src)
		}
	case <-time.After(time.Second):
		t.Fatal("the waiting stream did not take the slot another source freed")
	}
	b.Close()
}

// The per-source limits count networks: every address of a /24 (IPv4, mapped IPv6 too) or
// of a /56 (IPv6) shares one allowance of streams and of buffered bytes, and the next
// network has its own.
func TestGuardLimitsPerNetwork(t *testing.T) {
	g, m, _ := testGuard(t, InboundLimits{MaxStreams: 64, MaxStreamsPerSource: 2, MaxBufferedBytes: 1000, StreamReadTimeout: time.Second})
	for _, c := range []struct {
		name        string
		same, other []string
	}{
		{"IPv4 /24", []string{"192.0.2.1", "::ffff:192.0.2.77"}, []string{"192.0.3.1"}},
		{"IPv6 /56", []string{"2001:db8:0:100::1", "2001:db8:0:1ff:ffff::2"}, []string{"2001:db8:0:200::1"}},
	} {
		for _, a := range c.same {
			if g.take(dial(t, a)) == nil {
				t.Fatalf("%s: the stream of %s, within the network's allowance, was not admitted", c.name, a)
			}
		}
		before := testutil.ToFloat64(m.refused.WithLabelValues("stream", refusedSource))
		// The network's queue: every stream beyond waits, from whichever address.
		for i := range queuedPerSlot * 2 {
			g.take(dial(t, c.same[i%2]))
		}
		g.take(dial(t, c.same[0]))
		if got := testutil.ToFloat64(m.refused.WithLabelValues("stream", refusedSource)) - before; got != 1 {
			t.Fatalf("%s: %v streams refused past the network's queue, want 1", c.name, got)
		}
		if g.take(dial(t, c.other[0])) == nil {
			t.Fatalf("%s: a stream of the next network (%s) was held up", c.name, c.other[0])
		}
		// Buffered bytes: half the budget per network, whichever address holds it.
		net1, net2 := netkey.OfString(c.same[0]), netkey.OfString(c.same[1])
		if !g.reserve(net1, 400) || g.reserve(net2, 101) || !g.reserve(netkey.OfString(c.other[0]), 500) {
			t.Fatalf("%s: buffered bytes are not shared by the network's addresses", c.name)
		}
		g.release(net1, 400)
		g.release(netkey.OfString(c.other[0]), 500)
	}
}
