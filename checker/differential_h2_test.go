package checker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// The HTTP/2 part of the differential test: servers that speak only h2 answer with heads of
// several sizes, probed by the prober and by net/http's h2 client with the prober's head
// limit (MaxResponseHead), so that both refuse the same heads.
// Where the verdict is a head over the limit, the prober must say so in its documented
// words (errHeadTooLarge), whatever the HTTP/2 framer made of the cut.

// h2Behaviour is one way an h2 server may answer, and what the prober's message must hold.
type h2Behaviour struct {
	name    string
	h       http.HandlerFunc
	wantMsg string
}

// headOf sets n cookies of about 16 bytes each, and one header of size bytes, then writes the match.
func headOf(n, size int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := range n {
			w.Header().Add("Set-Cookie", fmt.Sprintf("c%d=%s", i, strings.Repeat("z", 10)))
		}
		if size > 0 {
			w.Header().Set("X-Big", strings.Repeat("b", size))
		}
		w.Write([]byte("needle"))
	}
}

func h2Behaviours() []h2Behaviour {
	limit := errHeadTooLarge.Error()
	return []h2Behaviour{
		{name: "head within the limit", h: headOf(1000, 0)},
		{name: "head of many fields over the limit", h: headOf(3000, 0), wantMsg: limit},
		{name: "head of many fields far over the limit", h: headOf(10000, 0), wantMsg: limit},
		{name: "one field over the limit", h: headOf(0, 100<<10), wantMsg: limit},
		{name: "one field just under the limit", h: headOf(0, MaxResponseHead-1024)},
	}
}

// probeNetH2 gets the check's URL with net/http's HTTP/2 client under the prober's head
// limit, and judges it as probeNetHTTP does: status 2xx-3xx and the match within the body's
// first BodyMatchLimit bytes.
func probeNetH2(c *config.Check, roots *x509.CertPool) diffVerdict {
	var protos http.Protocols
	protos.SetHTTP2(true)
	target := hostPort(c.Target.Host, c.Target.Port)
	tr := &http.Transport{
		Protocols:              &protos,
		MaxResponseHeaderBytes: MaxResponseHead,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, target)
		},
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: c.HostHeader},
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout.Std())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.HostHeader+"/", nil)
	if err != nil {
		return diffVerdict{why: err.Error()}
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return diffVerdict{why: err.Error()}
	}
	defer resp.Body.Close()
	v := diffVerdict{status: resp.StatusCode, why: fmt.Sprintf("status %d over %s", resp.StatusCode, resp.Proto)}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, config.BodyMatchLimit))
	v.healthy = resp.StatusCode >= 200 && resp.StatusCode < 400 && strings.Contains(string(body), c.BodyMatch)
	return v
}

// testDifferentialH2 runs every h2 behaviour with the prober and net/http's h2 client.
func testDifferentialH2(t *testing.T) {
	ca := newTestCA(t)
	for _, b := range h2Behaviours() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			now := time.Now()
			cert := ca.leaf(t, []string{"app.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
			roots := ca.pool
			c := checkFor("diff-h2", config.ProtocolHTTP, h2OnlyServer(t, cert, false, b.h))
			c.BodyMatch = "needle"
			c.Timeout = config.Duration(5 * time.Second) // a bound, not a measure: under -race on a busy machine a 1 s probe of 10,000 fields timed out
			httpsTo("app.example.test")(&c)
			if err := validateCheck(&c); err != nil {
				t.Fatal(err)
			}
			vigil, std := probeVigil(&c, roots), probeNetH2(&c, roots)
			switch {
			case vigil.healthy != std.healthy || vigil.status != 0 && std.status != 0 && vigil.status != std.status:
				t.Errorf("disagreement: prober healthy=%v (%s), net/http h2 healthy=%v (%s)", vigil.healthy, vigil.why, std.healthy, std.why)
			case !strings.Contains(vigil.why, b.wantMsg):
				t.Errorf("prober: %s; want the message to say %q", vigil.why, b.wantMsg)
			default:
				t.Logf("prober healthy=%v (%s); net/http h2 healthy=%v (%s)", vigil.healthy, vigil.why, std.healthy, std.why)
			}
		})
	}
}
