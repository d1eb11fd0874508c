package checker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// The differential test probes local servers that each answer in one way a real server may,
// with Vigil's prober and with net/http side by side, under the same check, and compares the
// verdicts. Every disagreement is either fixed or listed in knownDisagreements, with its
// reason, and in docs/probes.md under the same name.

// knownDisagreements are the behaviours on which the prober and net/http disagree on purpose.
// docs/probes.md lists each by name with this reason.
func knownDisagreements() map[string]string {
	return map[string]string{
		"1xx heads over the head limit": "the prober counts every interim head against MaxResponseHead (64 KiB); net/http allows 10 MB",
		"huge head over the limit":      "the prober bounds a response head at MaxResponseHead (64 KiB); net/http allows 10 MB",
		"brotli unasked":                "a body in a coding the prober cannot decode (anything but gzip) is a protocol error; net/http searches the encoded bytes",
	}
}

// diffTarget is a server of one behaviour, and what probing it needs.
type diffTarget struct {
	ap    netip.AddrPort
	roots *x509.CertPool // the roots both clients trust
}

// behaviour is one way a server may answer: its server, and how the check that probes it
// differs from the default (a GET of / with body match "needle", 1s timeout).
type behaviour struct {
	name  string
	serve func(t *testing.T) diffTarget
	edit  func(c *config.Check)
}

// diffVerdict is what one client made of a behaviour.
type diffVerdict struct {
	healthy bool
	status  int
	why     string
}

// rawDiff serves resp, written as is after the request's head, then closes.
func rawDiff(resp string) func(t *testing.T) diffTarget {
	return func(t *testing.T) diffTarget {
		return diffTarget{ap: rawServer(t, func(ctx context.Context, c net.Conn) {
			readRequest(c)
			c.Write([]byte(resp))
			c.Close()
		})}
	}
}

// rawHold serves resp after the request's head and keeps the connection open.
func rawHold(resp string) func(t *testing.T) diffTarget {
	return func(t *testing.T) diffTarget {
		return diffTarget{ap: rawServer(t, func(ctx context.Context, c net.Conn) {
			readRequest(c)
			c.Write([]byte(resp))
			<-ctx.Done()
		})}
	}
}

// trickle writes head, then body one byte every gap, for as long as the test runs.
func trickle(head, body string, gap time.Duration) func(t *testing.T) diffTarget {
	return func(t *testing.T) diffTarget {
		return diffTarget{ap: rawServer(t, func(ctx context.Context, c net.Conn) {
			readRequest(c)
			c.Write([]byte(head))
			for i := 0; i < len(body); i++ {
				if _, err := c.Write([]byte{body[i]}); err != nil {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(gap):
				}
			}
			<-ctx.Done()
		})}
	}
}

// resetAfter writes part, then resets the connection (RST, not FIN).
func resetAfter(part string) func(t *testing.T) diffTarget {
	return func(t *testing.T) diffTarget {
		return diffTarget{ap: rawServer(t, func(ctx context.Context, c net.Conn) {
			readRequest(c)
			c.Write([]byte(part))
			time.Sleep(20 * time.Millisecond) // let the bytes leave before the reset
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			c.Close()
		})}
	}
}

// handled serves h with net/http.
func handled(h http.HandlerFunc) func(t *testing.T) diffTarget {
	return func(t *testing.T) diffTarget { return diffTarget{ap: httpServer(t, h)} }
}

func okNeedle(w http.ResponseWriter, r *http.Request) { w.Write([]byte("all good: needle")) }

// probeVigil runs the prober on c.
func probeVigil(c *config.Check, roots *x509.CertPool) diffVerdict {
	r := loopbackProber(ProberOptions{RootCAs: roots}).Probe(context.Background(), c)
	return diffVerdict{healthy: r.Healthy, status: r.StatusCode, why: string(r.Reason) + ": " + r.Message + " over " + r.Protocol}
}

// probeNetHTTP judges c with net/http by the same rules: status in the expected ranges, the
// body match within the first BodyMatchLimit bytes of the body as net/http delivers it (read
// up to the match), redirects followed only when the check says so, all within the timeout.
// It offers HTTP/2 and HTTP/1.1 over TLS and asks for gzip, as net/http does by default.
func probeNetHTTP(c *config.Check, roots *x509.CertPool) diffVerdict {
	h := firstHop(c)
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout.Std())
	defer cancel()
	target := hostPort(c.Target.Host, c.Target.Port)
	named := stripPort(h.hostHeader)
	if c.TLSCA != "" {
		roots = x509.NewCertPool()
		roots.AppendCertsFromPEM([]byte(c.TLSCA))
	}
	tr := &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, _ := net.SplitHostPort(addr); host == named && c.HostHeader != "" {
				addr = target // the Host header names it; the check dials its target
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: h.sni, InsecureSkipVerify: !c.TLSVerify},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	if !c.FollowRedirects {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	req, err := http.NewRequestWithContext(ctx, h.method, h.scheme()+"://"+h.hostHeader+h.target, nil)
	if err != nil {
		return diffVerdict{why: err.Error()}
	}
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return diffVerdict{why: err.Error()}
	}
	defer resp.Body.Close()
	v := diffVerdict{status: resp.StatusCode, why: fmt.Sprintf("status %d over %s", resp.StatusCode, resp.Proto)}
	if !statusExpected(c.ExpectStatus, resp.StatusCode) {
		return v
	}
	if c.BodyMatch != "" {
		buf := make([]byte, 0, config.BodyMatchLimit)
		for {
			n, err := resp.Body.Read(buf[len(buf):config.BodyMatchLimit])
			buf = buf[:len(buf)+n]
			if strings.Contains(string(buf), c.BodyMatch) {
				break
			}
			if errors.Is(err, io.EOF) || len(buf) == config.BodyMatchLimit {
				v.why += ": no match"
				return v
			}
			if err != nil {
				v.why += ": " + err.Error()
				return v
			}
		}
	}
	v.healthy = true
	return v
}

// TestDifferential runs every behaviour against both clients.
func TestDifferential(t *testing.T) {
	bs := behaviours(t)
	if len(bs) < 40 {
		t.Fatalf("%d behaviours, want at least 40", len(bs))
	}
	known := knownDisagreements()
	seen := map[string]bool{}
	for _, b := range bs {
		if seen[b.name] {
			t.Fatalf("behaviour %q twice", b.name)
		}
		seen[b.name] = true
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tgt := b.serve(t)
			c := checkFor("diff", config.ProtocolHTTP, tgt.ap)
			c.BodyMatch = "needle"
			if b.edit != nil {
				b.edit(&c)
			}
			if err := validateCheck(&c); err != nil {
				t.Fatal(err)
			}
			vigil, std := probeVigil(&c, tgt.roots), probeNetHTTP(&c, tgt.roots)
			agree := vigil.healthy == std.healthy && (vigil.status == 0 || std.status == 0 || vigil.status == std.status)
			reason, isKnown := known[b.name]
			switch {
			case !agree && !isKnown:
				t.Errorf("disagreement: prober healthy=%v (%s), net/http healthy=%v (%s)", vigil.healthy, vigil.why, std.healthy, std.why)
			case agree && isKnown:
				t.Errorf("listed as a disagreement (%s) but both say healthy=%v: remove it from knownDisagreements and docs/probes.md", reason, vigil.healthy)
			default:
				t.Logf("prober healthy=%v (%s); net/http healthy=%v (%s)", vigil.healthy, vigil.why, std.healthy, std.why)
			}
		})
	}
	for name := range known {
		if !seen[name] {
			t.Errorf("known disagreement %q has no behaviour", name)
		}
	}
	t.Run("dns", testDifferentialDNS)
	t.Run("grpc", testDifferentialGRPC)
	t.Run("h2", testDifferentialH2)
}

// TestDisagreementsDocumented keeps docs/probes.md's list of disagreements, and its count of
// behaviours, in step with the test.
func TestDisagreementsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../docs/probes.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := fmt.Sprintf("probes %d local servers", len(behaviours(t))); !strings.Contains(string(readme), n) {
		t.Errorf("docs/probes.md does not say the differential test %s", n)
	}
	for name := range knownDisagreements() {
		if !strings.Contains(string(readme), "| "+name+" |") {
			t.Errorf("docs/probes.md does not list the disagreement %q (a table row starting with it)", name)
		}
	}
}
