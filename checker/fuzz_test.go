package checker

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// scriptedDialer answers every connection with the same bytes, then closes: a server that
// says whatever the fuzzer wants, without sockets.
type scriptedDialer struct{ response []byte }

func (d scriptedDialer) DialContext(context.Context, string, string) (net.Conn, error) {
	client, server := net.Pipe()
	go func() {
		defer server.Close()
		server.SetDeadline(time.Now().Add(2 * time.Second))
		readRequest(server)
		server.Write(d.response)
	}()
	return client, nil
}

// FuzzHTTPResponse feeds arbitrary responses to the HTTP probe: it must never panic, must end
// within its timeout, and must end with a reason from the closed set.
func FuzzHTTPResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nneedle",
		"HTTP/1.1 503 Service Unavailable\r\n\r\n",
		"HTTP/1.1 302 Found\r\nLocation: /again\r\n\r\n",
		"HTTP/1.1 302 Found\r\nLocation: http://[::1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nneedle\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
		"HTTP/1.0 200\r\n\r\n",
		"HTTP/9.9 999 ?\r\n\r\n",
		"SSH-2.0-x\r\n",
		"",
		"\x00\x01\x02",
	} {
		f.Add([]byte(seed), true)
	}
	reasons := []Reason{ReasonOK, ReasonTimeout, ReasonConnectionClosed, ReasonProtocol, ReasonStatus,
		ReasonBodyMismatch, ReasonRedirectLoop, ReasonTooManyRedirects, ReasonBadRedirect, ReasonConnectionReset,
		ReasonDNS, ReasonAddressRefused} // the last two from redirects to names and reserved addresses
	m := calibrate.Start()
	f.Cleanup(m.Stop)
	f.Fuzz(func(t *testing.T, response []byte, follow bool) {
		c := config.DefaultCheck()
		c.ID, c.Protocol = "fuzz", config.ProtocolHTTP
		c.Target = config.Target{Host: "10.0.0.1", Port: 80}
		c.Timeout = config.Duration(500 * time.Millisecond)
		c.BodyMatch, c.FollowRedirects = "needle", follow
		p := NewProber(ProberOptions{Dialer: scriptedDialer{response}, Resolver: &staticResolver{},
			Addresses: AddressPolicy{AllowLoopback: true, Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
		start := time.Now()
		r := p.Probe(context.Background(), &c)
		// The timeout and as much again on an idle machine, the slack scaled by the slowdown
		// measured meanwhile.
		if load := m.Since(start); load.Wall > 500*time.Millisecond+load.Scale(500*time.Millisecond) {
			t.Errorf("probe took %v with a 500 ms timeout (%v)", load.Wall, load)
		}
		if !slices.Contains(reasons, r.Reason) {
			t.Errorf("reason %q (%s) outside the expected set", r.Reason, r.Message)
		}
		if r.Healthy != (r.Reason == ReasonOK) {
			t.Errorf("healthy=%v with reason %s", r.Healthy, r.Reason)
		}
	})
}
