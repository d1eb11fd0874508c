package gossip

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

// Streams of one source over its limit wait for a slot instead of being refused (a checker's
// pages come back to back, and the checkers of one host are one source), and take the slots
// as they free, oldest first; past the queue's bound they are refused, and so is a stream that
// waited too long; another source's streams are not held up.
func TestGuardQueuesStreamsOverTheSourceLimit(t *testing.T) {
	g, m, started := testGuard(t, InboundLimits{MaxStreams: 64, MaxStreamsPerSource: 2, StreamReadTimeout: 50 * time.Millisecond})
	var open []*guardedConn
	for range 2 {
		gc := g.take(dial(t, "10.0.0.1"))
		if gc == nil {
			t.Fatal("a stream under the limit was not admitted")
		}
		open = append(open, gc)
	}
	queue := queuedPerSlot * 2
	for i := range queue {
		if gc := g.take(dial(t, "10.0.0.1")); gc != nil {
			t.Fatalf("stream %d over the limit admitted at once, want it to wait", i)
		}
	}
	if gc := g.take(dial(t, "10.0.0.2")); gc == nil {
		t.Fatal("another source's stream was held up")
	}
	refused := func(reason string) float64 { return testutil.ToFloat64(m.refused.WithLabelValues("stream", reason)) }
	if g.take(dial(t, "10.0.0.1")); refused(refusedSource) != 1 {
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
	if g.streams != 1 || g.perSource["10.0.0.1"] != 0 {
		t.Fatalf("slots held: %d in all, %d by 10.0.0.1; want 1 and 0", g.streams, g.perSource["10.0.0.1"])
	}
}

// When the total limit is reached, a source's streams wait too, and take the slots another
// source frees.
func TestGuardQueuesStreamsOverTheTotalLimit(t *testing.T) {
	g, _, started := testGuard(t, InboundLimits{MaxStreams: 2, MaxStreamsPerSource: 2, StreamReadTimeout: time.Second})
	a := g.take(dial(t, "10.0.0.1"))
	b := g.take(dial(t, "10.0.0.1"))
	if a == nil || b == nil {
		t.Fatal("streams under the limits were not admitted")
	}
	if g.take(dial(t, "10.0.0.2")) != nil {
		t.Fatal("a stream over the total limit admitted at once")
	}
	a.Close()
	select {
	case gc := <-started:
		if gc.src != "10.0.0.2" {
			t.Fatalf("slot given to %s, want 10.0.0.2", gc.src)
		}
	case <-time.After(time.Second):
		t.Fatal("the waiting stream did not take the slot another source freed")
	}
	b.Close()
}
