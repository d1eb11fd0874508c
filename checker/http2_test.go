package checker

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"golang.org/x/net/http2"
)

// h2OnlyServer is a real HTTPS server that speaks only HTTP/2, with cert. When alert is set
// it refuses a client that does not offer h2 in the handshake (no_application_protocol),
// as servers that enforce ALPN do; otherwise it accepts it and closes the connection, as Go's
// and gRPC's servers do.
func h2OnlyServer(t testing.TB, cert tls.Certificate, alert bool, h http.HandlerFunc) netip.AddrPort {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	var protos http.Protocols
	protos.SetHTTP2(true)
	srv.Config.Protocols = &protos
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.EnableHTTP2 = true
	srv.TLS = h2OnlyTLS(cert, alert)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return netip.MustParseAddrPort(srv.Listener.Addr().String())
}

// h2OnlyTLS is the TLS configuration of h2OnlyServer.
func h2OnlyTLS(cert tls.Certificate, alert bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if alert {
		cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			if slices.Contains(hello.SupportedProtos, "h2") {
				return nil, nil
			}
			return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"x-h2-only"}}, nil
		}
	}
	return cfg
}

// h1OnlyTLS is the TLS configuration of a server that speaks only HTTP/1.1 and refuses a
// client that offers only h2 (no_application_protocol).
func h1OnlyTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
}

// h2ResetServer speaks only HTTP/2 and resets, after a pause that lets the request arrive,
// every TLS connection that did not negotiate h2: what a server that closes with a client's
// request unread looks like.
func h2ResetServer(t testing.TB, cert tls.Certificate, h http.HandlerFunc) netip.AddrPort {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
					time.Sleep(50 * time.Millisecond)
					tc.NetConn().(*net.TCPConn).SetLinger(0)
					tc.NetConn().Close()
					return
				}
				(&http2.Server{}).ServeConn(tc, &http2.ServeConnOpts{Handler: h})
				tc.Close()
			})
		}
	})
	return netip.MustParseAddrPort(ln.Addr().String())
}

// TestHTTP2OnlyServers checks that a probe speaks HTTP/2 to a server that offers only h2, by
// either way it shows it, with the same rules (status, interim responses, body match) and
// the timings of every phase, and says so in the result.
func TestHTTP2OnlyServers(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	now := time.Now()
	cert := ca.leaf(t, []string{"h2.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	handler := func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 || r.Header.Get("Accept-Encoding") != "identity" || r.Host != "h2.example.test" {
			http.Error(w, "wrong request: "+r.Proto+" "+r.Host, http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/down":
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/late":
			w.Write([]byte(strings.Repeat("-", 6000) + "needle"))
		case "/big":
			w.Write([]byte("needle" + strings.Repeat("-", 5<<20)))
		default:
			w.WriteHeader(http.StatusEarlyHints)
			w.Write([]byte("h2 needle"))
		}
	}
	for i, serve := range []func() netip.AddrPort{
		func() netip.AddrPort { return h2OnlyServer(t, cert, false, handler) },
		func() netip.AddrPort { return h2OnlyServer(t, cert, true, handler) },
		func() netip.AddrPort { return h2ResetServer(t, cert, handler) },
	} {
		alert := []string{"closes", "refuses by ALPN", "resets"}[i]
		ap := serve()
		p := loopbackProber(ProberOptions{RootCAs: ca.pool})
		tests := []struct {
			path string
			want Reason
		}{
			{"/", ReasonOK},
			{"/down", ReasonStatus},
			{"/late", ReasonBodyMismatch},
			{"/big", ReasonOK},
		}
		for _, tt := range tests {
			c := checkFor("h2", config.ProtocolHTTPS, ap)
			c.HostHeader, c.Path, c.BodyMatch = "h2.example.test", tt.path, "needle"
			r := p.Probe(context.Background(), &c)
			if r.Reason != tt.want || r.Protocol != "h2" {
				t.Errorf("server that %s, %s: %s (%s) over %q, want %s over h2", alert, tt.path, r.Reason, r.Message, r.Protocol, tt.want)
				continue
			}
			tm := r.Timings
			if tm.Connect <= 0 || tm.TLS <= 0 || tm.FirstByte <= tm.TLS || tm.Total < tm.FirstByte {
				t.Errorf("server that %s, %s: timings %+v", alert, tt.path, tm)
			}
		}
	}

	// A server that speaks both gets HTTP/1.1, as before.
	both, _ := tlsServer(t, cert, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(r.Proto)) })
	c := checkFor("both", config.ProtocolHTTPS, both)
	c.HostHeader, c.BodyMatch = "h2.example.test", "HTTP/1.1"
	if r := loopbackProber(ProberOptions{RootCAs: ca.pool}).Probe(context.Background(), &c); !r.Healthy || r.Protocol != "http/1.1" {
		t.Errorf("a server of both protocols: %s (%s) over %q", r.Reason, r.Message, r.Protocol)
	}
}

// TestHTTP2HeadLimit checks that the head limit holds over HTTP/2 too, with the same message.
func TestHTTP2HeadLimit(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	now := time.Now()
	cert := ca.leaf(t, []string{"h2.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	ap := h2OnlyServer(t, cert, false, func(w http.ResponseWriter, r *http.Request) {
		for i := range 5000 {
			w.Header().Add("X-Pad", strings.Repeat("p", 20)+string(rune('a'+i%26)))
		}
	})
	c := checkFor("h2head", config.ProtocolHTTPS, ap)
	c.HostHeader = "h2.example.test"
	r := loopbackProber(ProberOptions{RootCAs: ca.pool}).Probe(context.Background(), &c)
	if r.Reason != ReasonProtocol || !strings.Contains(r.Message, "limit of 65536 bytes") {
		t.Errorf("5,000 headers over h2: %s (%s)", r.Reason, r.Message)
	}
}

// TestCABundlePerCheck checks that a check's own CA bundle (tls_ca) verifies a private
// endpoint in place of the prober's roots, over HTTP/1.1 and HTTP/2 alike.
func TestCABundlePerCheck(t *testing.T) {
	t.Parallel()
	private, other := newTestCA(t), newTestCA(t)
	now := time.Now()
	cert := private.leaf(t, []string{"internal.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	h1, _ := tlsServer(t, cert, func(w http.ResponseWriter, r *http.Request) {})
	h2 := h2OnlyServer(t, cert, false, func(w http.ResponseWriter, r *http.Request) {})
	for _, ap := range []netip.AddrPort{h1, h2} {
		c := checkFor("private", config.ProtocolHTTPS, ap)
		c.HostHeader = "internal.example.test"
		tests := []struct {
			name   string
			bundle string
			roots  *testCA // the prober's default roots
			want   Reason
		}{
			{"no bundle, system roots", "", nil, ReasonTLSCertificate},
			{"the private CA's bundle", private.pem(), nil, ReasonOK},
			{"another CA's bundle, though the prober's roots would do", other.pem(), private, ReasonTLSCertificate},
			{"the prober's roots", "", private, ReasonOK},
			{"a bundle without a certificate", "not a PEM bundle", nil, ReasonError},
		}
		for _, tt := range tests {
			opts := ProberOptions{}
			if tt.roots != nil {
				opts.RootCAs = tt.roots.pool
			}
			c.TLSCA = tt.bundle
			if r := loopbackProber(opts).Probe(context.Background(), &c); r.Reason != tt.want {
				t.Errorf("%v, %s: %s (%s), want %s", ap, tt.name, r.Reason, r.Message, tt.want)
			}
		}
	}
}

// TestH2PriorKnowledge checks a check that asks for HTTP/2 (http2): an https probe offers
// h2 alone, one connection per probe from the first, and fails when the server refuses h2
// or chooses no protocol; an http probe speaks h2c with prior knowledge, and fails against
// a server that speaks only HTTP/1.1.
func TestH2PriorKnowledge(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	now := time.Now()
	cert := ca.leaf(t, []string{"h2.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	handler := func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("needle")) }
	var dials atomic.Int32
	var d net.Dialer
	p := loopbackProber(ProberOptions{RootCAs: ca.pool, Dialer: dialFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	})})
	probe := func(proto config.Protocol, ap netip.AddrPort) Result {
		c := checkFor("prior", proto, ap)
		c.HostHeader, c.BodyMatch, c.HTTP2 = "h2.example.test", "needle", true
		return p.Probe(context.Background(), &c)
	}

	h2 := h2OnlyServer(t, cert, true, handler)
	for i := range 3 {
		r := probe(config.ProtocolHTTPS, h2)
		if !r.Healthy || r.Protocol != "h2" || r.Timings.Connect <= 0 || r.Timings.TLS <= 0 {
			t.Fatalf("h2-only server, probe %d: %s (%s) over %q, timings %+v", i, r.Reason, r.Message, r.Protocol, r.Timings)
		}
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("h2-only server: 3 probes over %d connections, want 3", n)
	}

	h1, _ := tlsServer(t, cert, handler) // offers http/1.1 alone: refuses h2
	if r := probe(config.ProtocolHTTPS, h1); r.Healthy || r.Reason != ReasonTLSHandshake || !strings.Contains(r.Message, "http2") {
		t.Errorf("HTTP/1.1-only TLS server: %s (%s), want tls_handshake naming http2", r.Reason, r.Message)
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}}) // no ALPN
	if err != nil {
		t.Fatal(err)
	}
	noALPN := &http.Server{Handler: http.HandlerFunc(handler), ErrorLog: log.New(io.Discard, "", 0)}
	go noALPN.Serve(ln)
	t.Cleanup(func() { noALPN.Close() })
	if r := probe(config.ProtocolHTTPS, netip.MustParseAddrPort(ln.Addr().String())); r.Healthy || r.Reason != ReasonProtocol {
		t.Errorf("TLS server without ALPN: %s (%s), want protocol", r.Reason, r.Message)
	}

	h2c := httptest.NewUnstartedServer(http.HandlerFunc(handler))
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	h2c.Config.Protocols = &protos
	h2c.Start()
	t.Cleanup(h2c.Close)
	if r := probe(config.ProtocolHTTP, netip.MustParseAddrPort(h2c.Listener.Addr().String())); !r.Healthy || r.Protocol != "h2c" {
		t.Errorf("h2c server: %s (%s) over %q", r.Reason, r.Message, r.Protocol)
	}

	plain := httptest.NewServer(http.HandlerFunc(handler))
	plain.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(plain.Close)
	if r := probe(config.ProtocolHTTP, netip.MustParseAddrPort(plain.Listener.Addr().String())); r.Healthy {
		t.Errorf("HTTP/1.1-only server probed with http2: healthy over %q", r.Protocol)
	}
}

// dialFunc is a Dialer made of a function.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}
