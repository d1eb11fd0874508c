package checker

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// TestHTTPProbeRequest checks what a probe sends: method, path, Host header, extra headers,
// a fresh connection asked to close at each probe, or, with keep_alive, one connection
// left open and reused; and what it reports: status, body match, timings and the address
// reached.
func TestHTTPProbeRequest(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		var mu sync.Mutex
		var got *http.Request
		remotes := map[string]bool{}
		ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = r
			remotes[r.RemoteAddr] = true
			mu.Unlock()
			w.WriteHeader(204)
		})
		c := checkFor("req", config.ProtocolHTTP, ap)
		c.Method, c.Path, c.HostHeader, c.KeepAlive = "HEAD", "/healthz?deep=1", "www.example.test", keep
		c.Headers = map[string]string{"X-Probe": "vigil", "Authorization": "Bearer t"}
		c.ExpectStatus = []config.StatusRange{{Low: 204, High: 204}}
		p := loopbackProber(ProberOptions{})
		for i := range 2 {
			r := p.Probe(context.Background(), &c)
			if !r.Healthy || r.Reason != ReasonOK || r.StatusCode != 204 || r.Message != "status 204" {
				t.Fatalf("keep_alive %v: result %+v, want healthy status 204", keep, r)
			}
			if r.Address != ap {
				t.Errorf("keep_alive %v: address %v, want %v", keep, r.Address, ap)
			}
			// With keep_alive, the second probe reuses the first one's connection: it
			// connects no more.
			connects := !keep || i == 0
			if (r.Timings.Connect > 0) != connects || r.Timings.FirstByte <= 0 || r.Timings.Total < r.Timings.FirstByte || r.Timings.DNS != 0 || r.Timings.TLS != 0 {
				t.Errorf("keep_alive %v, probe %d: timings %+v", keep, i, r.Timings)
			}
		}
		p.CloseIdle()
		mu.Lock()
		if got.Method != "HEAD" || got.URL.RequestURI() != "/healthz?deep=1" || got.Host != "www.example.test" ||
			got.Header.Get("X-Probe") != "vigil" || got.Header.Get("Authorization") != "Bearer t" ||
			got.Close == keep || !strings.HasPrefix(got.UserAgent(), "vigil-checker") {
			t.Errorf("keep_alive %v: server saw %s %s Host=%s headers=%v close=%v", keep, got.Method, got.URL, got.Host, got.Header, got.Close)
		}
		if want := map[bool]int{false: 2, true: 1}[keep]; len(remotes) != want {
			t.Errorf("keep_alive %v: two probes came from %d connections, want %d", keep, len(remotes), want)
		}
		mu.Unlock()
	}
}

func TestHTTPStatusAndBody(t *testing.T) {
	t.Parallel()
	ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			w.WriteHeader(404)
		case "/late":
			w.Write([]byte(strings.Repeat("-", 6000) + "needle"))
		case "/chunked":
			for _, s := range []string{"hay ", "hay ", "need", "le"} {
				w.Write([]byte(s))
				w.(http.Flusher).Flush()
			}
		default:
			w.Write([]byte("all good: needle"))
		}
	})
	p := loopbackProber(ProberOptions{})
	tests := []struct {
		path   string
		match  string
		expect []config.StatusRange
		want   Reason
	}{
		{"/", "needle", nil, ReasonOK},
		{"/", "haystack", nil, ReasonBodyMismatch},
		{"/late", "needle", nil, ReasonBodyMismatch}, // past the first 5,120 bytes
		{"/chunked", "needle", nil, ReasonOK},
		{"/missing", "", nil, ReasonStatus},
		{"/missing", "", []config.StatusRange{{Low: 200, High: 299}, {Low: 404, High: 404}}, ReasonOK},
		{"/", "", []config.StatusRange{{Low: 500, High: 599}}, ReasonStatus},
	}
	for _, tt := range tests {
		c := checkFor("body", config.ProtocolHTTP, ap)
		c.Path, c.BodyMatch, c.ExpectStatus = tt.path, tt.match, tt.expect
		r := p.Probe(context.Background(), &c)
		if r.Reason != tt.want || r.Healthy != (tt.want == ReasonOK) {
			t.Errorf("%s match %q expect %v: %s (%s), want %s", tt.path, tt.match, tt.expect, r.Reason, r.Message, tt.want)
		}
	}
}

func TestHTTPSProbe(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	now := time.Now()
	notAfter := now.Add(90 * 24 * time.Hour).Truncate(time.Second)
	cert := ca.leaf(t, []string{"app.example.test"}, nil, now.Add(-time.Hour), notAfter)
	ap, sni := tlsServer(t, cert, func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "app.example.test" {
			w.WriteHeader(421)
			return
		}
		w.Write([]byte("secure"))
	})
	c := checkFor("tls", config.ProtocolHTTPS, ap)
	c.HostHeader, c.BodyMatch = "app.example.test", "secure"
	r := loopbackProber(ProberOptions{RootCAs: ca.pool}).Probe(context.Background(), &c)
	if !r.Healthy {
		t.Fatalf("valid certificate: %s (%s)", r.Reason, r.Message)
	}
	if got := sni.Load(); got != "app.example.test" {
		t.Errorf("server saw SNI %v, want the host header's name", got)
	}
	if !r.CertNotAfter.Equal(notAfter) {
		t.Errorf("certificate expiry %v, want %v", r.CertNotAfter, notAfter)
	}
	if r.Timings.TLS <= 0 {
		t.Errorf("no TLS timing: %+v", r.Timings)
	}

	// An SNI of its own, for a name the certificate does not hold: refused by verification.
	c.SNI = "other.example.test"
	r = loopbackProber(ProberOptions{RootCAs: ca.pool}).Probe(context.Background(), &c)
	if r.Reason != ReasonTLSCertificate || sni.Load() != "other.example.test" {
		t.Errorf("wrong SNI: %s (%s), server saw %v", r.Reason, r.Message, sni.Load())
	}

	// Verification off: a self-signed, expired certificate passes, and its expiry is still
	// reported.
	bad := (*testCA)(nil).leaf(t, nil, nil, now.Add(-48*time.Hour), now.Add(-24*time.Hour).Truncate(time.Second))
	ap2, _ := tlsServer(t, bad, func(w http.ResponseWriter, r *http.Request) {})
	c2 := checkFor("insecure", config.ProtocolHTTPS, ap2)
	c2.TLSVerify = false
	r = loopbackProber(ProberOptions{}).Probe(context.Background(), &c2)
	if !r.Healthy || !r.CertNotAfter.Equal(now.Add(-24*time.Hour).Truncate(time.Second)) {
		t.Errorf("verification off: %+v", r)
	}
	c2.TLSVerify = true
	r = loopbackProber(ProberOptions{}).Probe(context.Background(), &c2)
	if r.Healthy || r.Reason != ReasonTLSCertificate || r.CertNotAfter.IsZero() {
		t.Errorf("verification on: %s (%s), expiry %v", r.Reason, r.Message, r.CertNotAfter)
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	final := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/final" {
			w.WriteHeader(404)
		}
	})
	ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, "/middle", http.StatusMovedPermanently)
		case "/middle":
			http.Redirect(w, r, "http://"+final.String()+"/final", http.StatusTemporaryRedirect)
		case "/nowhere":
			w.WriteHeader(http.StatusFound)
		case "/ftp":
			http.Redirect(w, r, "ftp://files.example/", http.StatusFound)
		}
	})
	p := loopbackProber(ProberOptions{})
	c := checkFor("redirect", config.ProtocolHTTP, ap)
	c.Path, c.FollowRedirects = "/start", true
	r := p.Probe(context.Background(), &c)
	if !r.Healthy || r.Redirects != 2 || r.Address != final || r.StatusCode != 200 {
		t.Errorf("followed: %+v", r)
	}
	c.FollowRedirects = false
	if r := p.Probe(context.Background(), &c); !r.Healthy || r.StatusCode != 301 || r.Redirects != 0 {
		t.Errorf("not followed (3xx is in the default ranges): %+v", r)
	}
	c.ExpectStatus = []config.StatusRange{{Low: 200, High: 299}}
	if r := p.Probe(context.Background(), &c); r.Reason != ReasonStatus {
		t.Errorf("not followed, 2xx expected: %s", r.Reason)
	}
	c.FollowRedirects = true
	for _, path := range []string{"/nowhere", "/ftp"} {
		c.Path = path
		if r := p.Probe(context.Background(), &c); r.Reason != ReasonBadRedirect {
			t.Errorf("%s: %s (%s), want bad_redirect", path, r.Reason, r.Message)
		}
	}
}

// TestResolvedAtEachProbe checks that a host name is resolved at every probe, in the
// check's address family, and that a name rebound to a private address is refused.
func TestResolvedAtEachProbe(t *testing.T) {
	t.Parallel()
	ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {})
	res := &staticResolver{}
	res.set("app.test", "127.0.0.1")
	p := loopbackProber(ProberOptions{Resolver: res})
	c := checkFor("named", config.ProtocolHTTP, ap)
	c.Target.Host = "app.test"
	for i := range 3 {
		r := p.Probe(context.Background(), &c)
		if !r.Healthy || r.Address != ap || r.Timings.DNS <= 0 {
			t.Fatalf("probe %d: %+v", i, r)
		}
	}
	if n := res.count("ip4"); n != 3 {
		t.Errorf("%d ip4 lookups for 3 probes", n)
	}
	res.set("app.test", "192.168.7.7") // DNS rebinding
	if r := p.Probe(context.Background(), &c); r.Reason != ReasonAddressRefused || r.Address.Addr().String() != "192.168.7.7" {
		t.Errorf("rebound to a private address: %s (%s) at %v", r.Reason, r.Message, r.Address)
	}
	c.IPVersion = 6
	r := p.Probe(context.Background(), &c)
	if res.count("ip6") != 1 || r.Reason != ReasonDNS {
		t.Errorf("ip_version 6: %d ip6 lookups, reason %s", res.count("ip6"), r.Reason)
	}
}

func TestIPv6Target(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "[::1]:"+port(netip.MustParseAddrPort(ln.Addr().String())) {
			w.WriteHeader(400)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ap := netip.MustParseAddrPort(ln.Addr().String())
	res := &staticResolver{}
	res.set("v6.test", "::1")
	c := checkFor("v6", config.ProtocolHTTP, ap)
	p := loopbackProber(ProberOptions{Resolver: res})
	if r := p.Probe(context.Background(), &c); !r.Healthy {
		t.Errorf("IPv6 literal: %s (%s)", r.Reason, r.Message)
	}
	c.Target.Host, c.IPVersion, c.HostHeader = "v6.test", 6, "[::1]:"+port(ap)
	if r := p.Probe(context.Background(), &c); !r.Healthy || r.Address != ap {
		t.Errorf("IPv6 by name: %s (%s) at %v", r.Reason, r.Message, r.Address)
	}
}

func TestTCPProbe(t *testing.T) {
	t.Parallel()
	ap := rawServer(t, func(ctx context.Context, c net.Conn) { c.Close() })
	c := checkFor("tcp", config.ProtocolTCP, ap)
	r := loopbackProber(ProberOptions{}).Probe(context.Background(), &c)
	if !r.Healthy || r.Address != ap || r.Timings.Connect <= 0 {
		t.Errorf("%+v", r)
	}
}

// TestRequestInjectionRefused checks that a check cannot smuggle bytes into its request.
func TestRequestInjectionRefused(t *testing.T) {
	t.Parallel()
	base := checkFor("inject", config.ProtocolHTTP, netip.MustParseAddrPort("127.0.0.1:1"))
	bad := []func(c *config.Check){
		func(c *config.Check) { c.Path = "/ HTTP/1.1\r\nX: y" },
		func(c *config.Check) { c.Path = "no-slash" },
		func(c *config.Check) { c.Method = "GET /" },
		func(c *config.Check) { c.HostHeader = "a\r\nX-Evil: 1" },
		func(c *config.Check) { c.Target.Host = "a\r\nX-Evil: 1" },
		func(c *config.Check) { c.Headers = map[string]string{"X-A": "1\r\nX-Evil: 1"} },
		func(c *config.Check) { c.Headers = map[string]string{"X A": "1"} },
	}
	for i, mut := range bad {
		c := base
		mut(&c)
		if err := validateCheck(&c); err == nil {
			t.Errorf("case %d: validateCheck accepted %+v", i, c)
		}
		r := loopbackProber(ProberOptions{}).Probe(context.Background(), &c)
		if r.Healthy || r.Reason != ReasonError || r.Address.IsValid() {
			t.Errorf("case %d: probe ran: %+v", i, r)
		}
	}
	if err := validateCheck(&base); err != nil {
		t.Errorf("a valid check was refused: %v", err)
	}
}
