package checker

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// TestHostileEndpoints probes real misbehaving servers on loopback. Each probe must end
// within its timeout (plus scheduling slack) with the right reason.
func TestHostileEndpoints(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	loopIP := []net.IP{net.ParseIP("127.0.0.1")}
	now := time.Now()
	expired := ca.leaf(t, nil, loopIP, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	selfSigned := (*testCA)(nil).leaf(t, nil, loopIP, now.Add(-time.Hour), now.Add(time.Hour))
	ok := func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }

	tests := []struct {
		name   string
		target func(t *testing.T) (config.Check, *Prober)
		want   Reason
		msg    string // a substring of the message, when it matters
	}{
		{"hangs after accept", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) { <-ctx.Done() })
			return checkFor("hang", config.ProtocolHTTP, ap), loopbackProber(ProberOptions{})
		}, ReasonTimeout, ""},
		{"accepts and never answers", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) { readRequest(c); <-ctx.Done() })
			return checkFor("silent", config.ProtocolHTTP, ap), loopbackProber(ProberOptions{})
		}, ReasonTimeout, ""},
		{"TLS port that never sends a ServerHello", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) { <-ctx.Done() })
			return checkFor("tls-hang", config.ProtocolHTTPS, ap), loopbackProber(ProberOptions{})
		}, ReasonTimeout, "tls handshake"},
		{"trickles one byte a second", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) {
				readRequest(c)
				for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") {
					if _, err := c.Write([]byte{b}); err != nil {
						return
					}
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Second):
					}
				}
			})
			return checkFor("trickle", config.ProtocolHTTP, ap), loopbackProber(ProberOptions{})
		}, ReasonTimeout, ""},
		{"trickles the body past the match window", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) {
				readRequest(c)
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"))
				for range 100 {
					if _, err := c.Write([]byte("x")); err != nil {
						return
					}
					select {
					case <-ctx.Done():
						return
					case <-time.After(200 * time.Millisecond):
					}
				}
			})
			c := checkFor("trickle-body", config.ProtocolHTTP, ap)
			c.BodyMatch = "needle"
			return c, loopbackProber(ProberOptions{})
		}, ReasonTimeout, ""},
		{"10 MB body without the match", func(t *testing.T) (config.Check, *Prober) {
			ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
				chunk := []byte(strings.Repeat("x", 64<<10))
				for range 160 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			})
			c := checkFor("big", config.ProtocolHTTP, ap)
			c.BodyMatch = "needle"
			return c, loopbackProber(ProberOptions{})
		}, ReasonBodyMismatch, "first 5120 bytes"},
		{"wrong status", func(t *testing.T) (config.Check, *Prober) {
			ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
			return checkFor("503", config.ProtocolHTTP, ap), loopbackProber(ProberOptions{})
		}, ReasonStatus, "status 503"},
		{"expired certificate", func(t *testing.T) (config.Check, *Prober) {
			ap, _ := tlsServer(t, expired, ok)
			return checkFor("expired", config.ProtocolHTTPS, ap), loopbackProber(ProberOptions{RootCAs: ca.pool})
		}, ReasonTLSCertificate, "expired"},
		{"self-signed certificate", func(t *testing.T) (config.Check, *Prober) {
			ap, _ := tlsServer(t, selfSigned, ok)
			return checkFor("self-signed", config.ProtocolHTTPS, ap), loopbackProber(ProberOptions{RootCAs: ca.pool})
		}, ReasonTLSCertificate, "unknown authority"},
		{"plain HTTP on an HTTPS check", func(t *testing.T) (config.Check, *Prober) {
			ap := httpServer(t, ok)
			return checkFor("not-tls", config.ProtocolHTTPS, ap), loopbackProber(ProberOptions{})
		}, ReasonTLSHandshake, ""},
		{"connection reset", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) {
				readRequest(c)
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			})
			return checkFor("reset", config.ProtocolHTTP, ap), loopbackProber(ProberOptions{})
		}, ReasonConnectionReset, ""},
		{"closed without an answer", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) { readRequest(c); c.Close() })
			return checkFor("closed", config.ProtocolHTTP, ap), loopbackProber(ProberOptions{})
		}, ReasonConnectionClosed, ""},
		{"garbage instead of HTTP", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) {
				readRequest(c)
				c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n\r\n"))
				c.Close()
			})
			return checkFor("garbage", config.ProtocolHTTP, ap), loopbackProber(ProberOptions{})
		}, ReasonProtocol, ""},
		{"endless headers", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) {
				readRequest(c)
				c.Write([]byte("HTTP/1.1 200 OK\r\n"))
				line := []byte("X-Pad: " + strings.Repeat("y", 1000) + "\r\n")
				for ctx.Err() == nil {
					if _, err := c.Write(line); err != nil {
						return
					}
				}
			})
			return checkFor("headers", config.ProtocolHTTP, ap), loopbackProber(ProberOptions{})
		}, ReasonProtocol, "limit of 65536 bytes"},
		{"broken chunked body", func(t *testing.T) (config.Check, *Prober) {
			ap := rawServer(t, func(ctx context.Context, c net.Conn) {
				readRequest(c)
				c.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n"))
				c.Close()
			})
			c := checkFor("chunked", config.ProtocolHTTP, ap)
			c.BodyMatch = "hello"
			return c, loopbackProber(ProberOptions{})
		}, ReasonProtocol, "read body"},
		{"redirect loop", func(t *testing.T) (config.Check, *Prober) {
			ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/a" {
					http.Redirect(w, r, "/b", http.StatusFound)
					return
				}
				http.Redirect(w, r, "/a", http.StatusFound)
			})
			c := checkFor("loop", config.ProtocolHTTP, ap)
			c.Path, c.FollowRedirects = "/a", true
			return c, loopbackProber(ProberOptions{})
		}, ReasonRedirectLoop, ""},
		{"endless redirects", func(t *testing.T) (config.Check, *Prober) {
			ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
			})
			c := checkFor("endless", config.ProtocolHTTP, ap)
			c.FollowRedirects = true
			return c, loopbackProber(ProberOptions{})
		}, ReasonTooManyRedirects, ""},
		{"redirect to a private address", func(t *testing.T) (config.Check, *Prober) {
			ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://10.20.30.40:8080/admin", http.StatusFound)
			})
			c := checkFor("to-private", config.ProtocolHTTP, ap)
			c.FollowRedirects = true
			return c, loopbackProber(ProberOptions{})
		}, ReasonAddressRefused, "10.20.30.40"},
		{"redirect to a name that resolves to link-local", func(t *testing.T) (config.Check, *Prober) {
			ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://metadata.test/latest", http.StatusFound)
			})
			res := &staticResolver{}
			res.set("metadata.test", "169.254.169.254")
			c := checkFor("to-metadata", config.ProtocolHTTP, ap)
			c.FollowRedirects = true
			return c, loopbackProber(ProberOptions{Resolver: res})
		}, ReasonAddressRefused, "link-local"},
		{"loopback when loopback is not allowed", func(t *testing.T) (config.Check, *Prober) {
			ap := httpServer(t, ok)
			return checkFor("no-loopback", config.ProtocolHTTP, ap), NewProber(ProberOptions{})
		}, ReasonAddressRefused, "loopback"},
		{"connection refused", func(t *testing.T) (config.Check, *Prober) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ap := netip.MustParseAddrPort(ln.Addr().String())
			ln.Close()
			return checkFor("refused", config.ProtocolTCP, ap), loopbackProber(ProberOptions{})
		}, ReasonConnectionRefused, ""},
		{"unknown host", func(t *testing.T) (config.Check, *Prober) {
			c := checkFor("nxdomain", config.ProtocolHTTP, netip.MustParseAddrPort("127.0.0.1:80"))
			c.Target.Host = "nowhere.test"
			return c, loopbackProber(ProberOptions{Resolver: &staticResolver{}})
		}, ReasonDNS, "nowhere.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, p := tt.target(t)
			m := calibrate.Start()
			defer m.Stop()
			start := time.Now()
			r := p.Probe(context.Background(), &c)
			took := time.Since(start)
			if r.Healthy || r.Reason != tt.want {
				t.Fatalf("healthy=%v reason=%s (%s), want unhealthy with %s", r.Healthy, r.Reason, r.Message, tt.want)
			}
			if tt.msg != "" && !strings.Contains(r.Message, tt.msg) {
				t.Errorf("message %q does not mention %q", r.Message, tt.msg)
			}
			// The slack is 750ms on an idle machine, scaled by the slowdown measured meanwhile.
			if load := m.Reading(); took > c.Timeout.Std()+load.Scale(750*time.Millisecond) {
				t.Errorf("probe took %v, more than the timeout %v and slack (%v)", took, c.Timeout.Std(), load)
			}
			if r.Timings.Total <= 0 || r.Timings.Total > took {
				t.Errorf("total timing %v outside (0, %v]", r.Timings.Total, took)
			}
		})
	}
}
