package checker

import (
	"context"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// connCounter counts the connections a server accepted.
type connCounter struct {
	mu    sync.Mutex
	conns map[string]bool
}

func (cc *connCounter) saw(r *http.Request) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.conns == nil {
		cc.conns = map[string]bool{}
	}
	cc.conns[r.RemoteAddr] = true
}

func (cc *connCounter) count() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.conns)
}

// TestConnectionReuse checks which probes run on the connection of the check's previous
// probe: none without keep_alive; with it, GET and HEAD whose response left it open and was read to its end; not a POST, not
// after Connection: close, an HTTP/1.0 answer or a body that had not all arrived, not for
// another check; and that a probe whose kept connection the server closed meanwhile runs on
// a fresh one and is judged by that.
func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	var cc connCounter
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cc.saw(r)
		switch r.URL.Path {
		case "/close":
			w.Header().Set("Connection", "close")
		case "/slow-tail":
			// The match is in the first write; the rest of the body comes later.
			w.Header().Set("Content-Length", "8192")
			w.Write([]byte("needle"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-time.After(200 * time.Millisecond):
			}
			w.Write([]byte(strings.Repeat("-", 8192-6)))
			return
		case "/chunked":
			// Chunked, but all in one write at the handler's end: the body has all
			// arrived with the head.
			w.Header().Set("Transfer-Encoding", "chunked")
			w.Write([]byte("needle"))
			w.Write([]byte(" and more"))
			return
		}
		w.Write([]byte("needle"))
	}))
	t.Cleanup(srv.Close)
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	p := loopbackProber(ProberOptions{})

	tests := []struct {
		name   string
		edit   func(c *config.Check)
		probes int
		conns  int
	}{
		{"GET", func(c *config.Check) {}, 3, 1},
		{"keep_alive off", func(c *config.Check) { c.KeepAlive = false }, 3, 3},
		{"HEAD", func(c *config.Check) { c.Method = "HEAD"; c.BodyMatch = "" }, 3, 1},
		{"chunked body read to its end", func(c *config.Check) { c.Path = "/chunked" }, 3, 1},
		{"POST", func(c *config.Check) { c.Method = "POST" }, 3, 3},
		{"Connection: close", func(c *config.Check) { c.Path = "/close" }, 3, 3},
		{"a body still arriving", func(c *config.Check) { c.Path = "/slow-tail" }, 2, 2},
	}
	for _, tt := range tests {
		before := cc.count()
		c := checkFor("reuse", config.ProtocolHTTP, ap)
		c.BodyMatch, c.KeepAlive = "needle", true
		tt.edit(&c)
		for i := range tt.probes {
			r := p.Probe(context.Background(), &c)
			if !r.Healthy {
				t.Fatalf("%s, probe %d: %s (%s)", tt.name, i, r.Reason, r.Message)
			}
			if i == 0 && r.Timings.Connect <= 0 {
				t.Errorf("%s: the first probe did not connect: %+v", tt.name, r.Timings)
			}
		}
		if got := cc.count() - before; got != tt.conns {
			t.Errorf("%s: %d probes used %d connections, want %d", tt.name, tt.probes, got, tt.conns)
		}
	}

	// Another check of the same target does not take the first one's connection.
	before := cc.count()
	a, b := checkFor("a", config.ProtocolHTTP, ap), checkFor("b", config.ProtocolHTTP, ap)
	a.KeepAlive, b.KeepAlive = true, true
	for _, c := range []*config.Check{&a, &b, &a, &b} {
		if r := p.Probe(context.Background(), c); !r.Healthy {
			t.Fatalf("check %s: %s (%s)", c.ID, r.Reason, r.Message)
		}
	}
	if got := cc.count() - before; got != 2 {
		t.Errorf("two checks of one target, two probes each: %d connections, want 2", got)
	}

	// The server closes the kept connection: the next probe is healthy on a fresh one.
	c := checkFor("closed", config.ProtocolHTTP, ap)
	c.KeepAlive = true
	if r := p.Probe(context.Background(), &c); !r.Healthy {
		t.Fatalf("first probe: %s (%s)", r.Reason, r.Message)
	}
	srv.CloseClientConnections()
	before = cc.count()
	r := p.Probe(context.Background(), &c)
	if !r.Healthy || r.Timings.Connect <= 0 {
		t.Errorf("after the server closed the kept connection: %s (%s), timings %+v", r.Reason, r.Message, r.Timings)
	}
	if got := cc.count() - before; got != 1 {
		t.Errorf("after the server closed the kept connection: %d new connections, want 1", got)
	}

	// The server goes away: the probe fails as a fresh connection does, not as the kept
	// one did.
	srv.Close()
	r = p.Probe(context.Background(), &c)
	if r.Healthy || r.Reason != ReasonConnectionRefused {
		t.Errorf("server gone: %s (%s), want connection_refused", r.Reason, r.Message)
	}
	p.CloseIdle()
	if n := p.idle.len(); n != 0 {
		t.Errorf("%d connections kept after CloseIdle", n)
	}
}

// TestConnectionReuseTLS checks that an https probe reuses its TLS connection (no second
// handshake) and still reports the certificate's expiry.
func TestConnectionReuseTLS(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	now := time.Now()
	cert := ca.leaf(t, []string{"tls.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	var cc connCounter
	ap, _ := tlsServer(t, cert, func(w http.ResponseWriter, r *http.Request) { cc.saw(r); w.Write([]byte("needle")) })
	c := checkFor("tls", config.ProtocolHTTPS, ap)
	c.HostHeader, c.BodyMatch, c.KeepAlive = "tls.example.test", "needle", true
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	p := loopbackProber(ProberOptions{RootCAs: ca.pool})
	for i := range 3 {
		r := p.Probe(context.Background(), &c)
		if !r.Healthy || r.Protocol != "http/1.1" || !r.CertNotAfter.Equal(leaf.NotAfter) {
			t.Fatalf("probe %d: %s (%s) over %q, certificate until %v", i, r.Reason, r.Message, r.Protocol, r.CertNotAfter)
		}
		if (r.Timings.TLS > 0) != (i == 0) {
			t.Errorf("probe %d: timings %+v, want a handshake in the first probe only", i, r.Timings)
		}
	}
	if n := cc.count(); n != 1 {
		t.Errorf("3 probes over %d connections, want 1", n)
	}
}

// fakeConn is a net.Conn that only records whether it was closed.
type fakeConn struct {
	net.Conn
	closed bool
}

func (f *fakeConn) Close() error { f.closed = true; return nil }

// TestIdleConnsExpiry checks the kept connections' bounds: a connection is not reused past
// its expiry or past maxConnAge after its dial, and expired ones are closed as others pass.
func TestIdleConnsExpiry(t *testing.T) {
	var ic idleConns
	t0 := time.Unix(1_000_000, 0)
	check := &config.Check{ID: "a"}
	key := func(port uint16) idleKey {
		return idleKey{check, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), port)}
	}

	a := &fakeConn{}
	ic.put(key(1), idleConn{conn: a, dialled: t0, expires: t0.Add(3 * time.Second)}, t0)
	if _, ok := ic.take(key(1), t0.Add(2*time.Second)); !ok || a.closed {
		t.Fatalf("a connection within its expiry was not handed out (closed %v)", a.closed)
	}

	b := &fakeConn{}
	ic.put(key(2), idleConn{conn: b, dialled: t0, expires: t0.Add(3 * time.Second)}, t0)
	if _, ok := ic.take(key(2), t0.Add(3*time.Second)); ok || !b.closed {
		t.Errorf("an expired connection was handed out or left open (closed %v)", b.closed)
	}

	// Dialled maxConnAge ago: not kept, whatever its idle expiry says.
	old := &fakeConn{}
	ic.put(key(3), idleConn{conn: old, dialled: t0, expires: t0.Add(maxConnAge + time.Minute)}, t0.Add(maxConnAge))
	if !old.closed || ic.len() != 0 {
		t.Errorf("a connection as old as maxConnAge was kept (closed %v, %d kept)", old.closed, ic.len())
	}

	// One that expires unvisited is closed when a later put passes by.
	c := &fakeConn{}
	ic.put(key(4), idleConn{conn: c, dialled: t0, expires: t0.Add(time.Second)}, t0)
	d := &fakeConn{}
	ic.put(key(5), idleConn{conn: d, dialled: t0, expires: t0.Add(10 * time.Second)}, t0.Add(2*time.Second))
	if !c.closed || d.closed || ic.len() != 1 {
		t.Errorf("sweep: expired closed %v, live closed %v, %d kept (want 1)", c.closed, d.closed, ic.len())
	}
	ic.closeAll()
	if !d.closed || ic.len() != 0 {
		t.Errorf("closeAll left %d connections (live closed %v)", ic.len(), d.closed)
	}
}

// TestH2Memory checks that a server found to speak only HTTP/2 costs one connection per
// probe from the second probe on, and that one that speaks HTTP/1.1 again is probed over it.
func TestH2Memory(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	now := time.Now()
	cert := ca.leaf(t, []string{"h2.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	var accepted sync.Map // remote address -> true, for every TLS connection the server saw
	handler := func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("needle")) }
	for _, alert := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(handler))
		var protos http.Protocols
		protos.SetHTTP2(true)
		srv.Config.Protocols = &protos
		srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				accepted.Store(c.RemoteAddr().String(), true)
			}
		}
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.EnableHTTP2 = true
		srv.TLS = h2OnlyTLS(cert, alert)
		srv.StartTLS()
		ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
		count := func() int {
			n := 0
			accepted.Range(func(_, _ any) bool { n++; return true })
			accepted.Clear()
			return n
		}
		p := loopbackProber(ProberOptions{RootCAs: ca.pool})
		c := checkFor("h2mem", config.ProtocolHTTPS, ap)
		c.HostHeader, c.BodyMatch = "h2.example.test", "needle"
		for i, want := range []int{2, 1, 1} {
			r := p.Probe(context.Background(), &c)
			if !r.Healthy || r.Protocol != "h2" {
				t.Fatalf("alert %v, probe %d: %s (%s) over %q", alert, i, r.Reason, r.Message, r.Protocol)
			}
			if got := count(); got != want {
				t.Errorf("alert %v, probe %d: %d connections, want %d", alert, i, got, want)
			}
		}
		srv.Close()

		// The same address now speaks only HTTP/1.1: the memory is forgotten, the probe
		// is judged over HTTP/1.1.
		ln, err := net.Listen("tcp", ap.String())
		if err != nil {
			t.Skipf("cannot listen again on %v: %v", ap, err)
		}
		h1 := httptest.NewUnstartedServer(http.HandlerFunc(handler))
		h1.Listener.Close()
		h1.Listener = ln
		h1.TLS = h1OnlyTLS(cert)
		h1.Config.ErrorLog = log.New(io.Discard, "", 0)
		h1.StartTLS()
		r := p.Probe(context.Background(), &c)
		if !r.Healthy || r.Protocol != "http/1.1" {
			t.Errorf("alert %v, after the server dropped h2: %s (%s) over %q", alert, r.Reason, r.Message, r.Protocol)
		}
		if p.h2only.knows(tlsTarget{ap, "h2.example.test"}, time.Now()) {
			t.Errorf("alert %v: the server is still remembered as h2-only", alert)
		}
		h1.Close()
	}
}

// TestConnectionReuseIdle408 checks that a 408 a server sent on a kept connection while it
// idled, before closing it, is not taken as the answer to the next probe.
func TestConnectionReuseIdle408(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	ap := rawServer(t, func(ctx context.Context, c net.Conn) {
		conns.Add(1)
		readRequest(c)
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nneedle"))
		time.Sleep(20 * time.Millisecond)
		c.Write([]byte("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
		c.Close()
	})
	c := checkFor("idle408", config.ProtocolHTTP, ap)
	c.BodyMatch, c.KeepAlive = "needle", true
	p := loopbackProber(ProberOptions{})
	for i := range 3 {
		if r := p.Probe(context.Background(), &c); !r.Healthy {
			t.Fatalf("probe %d: %s (%s)", i, r.Reason, r.Message)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("3 probes over %d connections, want 3 (each kept one was closed)", n)
	}
}

// TestIdleLimit checks that kept connections take at most a quarter of the open-file limit,
// and no more than one per check, whatever the limit.
func TestIdleLimit(t *testing.T) {
	for _, tt := range []struct {
		nofile uint64
		want   int
	}{{0, 1024}, {1024, 256}, {20000, 5000}, {1 << 20, maxIdleConns}} {
		if got := idleLimit(tt.nofile); got != tt.want {
			t.Errorf("idleLimit(%d) = %d, want %d", tt.nofile, got, tt.want)
		}
	}
	ic := idleConns{limit: 2}
	now := time.Unix(1_000_000, 0)
	var conns []*fakeConn
	for i := range 3 {
		fc := &fakeConn{}
		conns = append(conns, fc)
		key := idleKey{&config.Check{ID: "a"}, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), uint16(i+1))}
		ic.put(key, idleConn{conn: fc, dialled: now, expires: now.Add(time.Second)}, now)
	}
	if ic.len() != 2 || conns[0].closed || conns[1].closed || !conns[2].closed {
		t.Errorf("limit 2: %d kept, closed %v %v %v (want the third closed)", ic.len(), conns[0].closed, conns[1].closed, conns[2].closed)
	}
}

// TestReuseServerStopsAccepting: a server that stops accepting connections but still answers
// on the one it holds fails the next probe of a check without keep_alive; a check with
// keep_alive is answered on its kept connection for a while, and fails at the first probe
// due maxConnAge or more after that connection was opened, within maxConnAge and an
// interval of the server stopping. The kept connections' clock is the test's, moved by one
// interval per probe.
func TestReuseServerStopsAccepting(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		var conns atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("needle")) }))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
		var clock atomic.Int64
		clock.Store(time.Unix(1_000_000, 0).UnixNano())
		p := loopbackProber(ProberOptions{})
		p.now = func() time.Time { return time.Unix(0, clock.Load()) }
		c := checkFor("stops-accepting", config.ProtocolHTTP, ap)
		c.BodyMatch, c.KeepAlive = "needle", keep
		interval := c.Interval.Std()

		if r := p.Probe(context.Background(), &c); !r.Healthy {
			t.Fatalf("keep_alive %v, first probe: %s (%s)", keep, r.Reason, r.Message)
		}
		srv.Listener.Close() // no new connection; the one the server holds stays open
		var failedAt time.Duration
		healthy := 0
		for elapsed := interval; elapsed <= maxConnAge+2*interval; elapsed += interval {
			clock.Add(int64(interval))
			r := p.Probe(context.Background(), &c)
			if r.Healthy {
				healthy++
				continue
			}
			if r.Reason != ReasonConnectionRefused {
				t.Errorf("keep_alive %v, %v after the server stopped accepting: %s (%s), want connection_refused", keep, elapsed, r.Reason, r.Message)
			}
			failedAt = elapsed
			break
		}
		switch {
		case !keep && failedAt != interval:
			t.Errorf("without keep_alive: first failure %v after the server stopped accepting (0: none), want at the next probe, %v", failedAt, interval)
		case keep && (healthy == 0 || failedAt == 0 || failedAt > maxConnAge+interval):
			t.Errorf("with keep_alive: %d probes answered on the kept connection, first failure %v after the server stopped accepting (0: none), want some answered and a failure within %v",
				healthy, failedAt, maxConnAge+interval)
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("keep_alive %v: the server accepted %d connections, want 1", keep, n)
		}
		p.CloseIdle()
		srv.Close()
	}
}
