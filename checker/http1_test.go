package checker

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestInterimResponses checks that a probe reads past 1xx responses (but 101) to the final
// one: 103 Early Hints then 503 is unhealthy, then 200 healthy, whatever the expected ranges.
func TestInterimResponses(t *testing.T) {
	t.Parallel()
	// net/http's own 103 and 100, as a Go target sends them.
	ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		switch r.URL.Path {
		case "/hints-then-503":
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/hints-then-200":
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusEarlyHints)
			w.Write([]byte("ready"))
		case "/continue-then-200":
			w.WriteHeader(http.StatusContinue)
			w.Write([]byte("ready"))
		}
	})
	p := loopbackProber(ProberOptions{})
	low := []config.StatusRange{{Low: 100, High: 299}}
	tests := []struct {
		path   string
		expect []config.StatusRange
		status int
		want   Reason
	}{
		{"/hints-then-503", nil, 503, ReasonStatus},
		{"/hints-then-503", low, 503, ReasonStatus}, // was healthy: 103 is in 100-299
		{"/hints-then-200", nil, 200, ReasonOK},     // was unhealthy: "status 103"
		{"/hints-then-200", low, 200, ReasonOK},
		{"/continue-then-200", nil, 200, ReasonOK},
	}
	for _, tt := range tests {
		c := checkFor("hints", config.ProtocolHTTP, ap)
		c.Path, c.ExpectStatus, c.BodyMatch = tt.path, tt.expect, ""
		if tt.want == ReasonOK {
			c.BodyMatch = "ready"
		}
		r := p.Probe(context.Background(), &c)
		if r.Reason != tt.want || r.StatusCode != tt.status || r.Healthy != (tt.want == ReasonOK) {
			t.Errorf("%s expecting %v: %s %d (%s), want %s %d", tt.path, tt.expect, r.Reason, r.StatusCode, r.Message, tt.want, tt.status)
		}
	}
}

// TestInterimLimits checks the raw cases: a 101 nobody asked for is final, and interim heads
// count against MaxResponseHead together with the final one.
func TestInterimLimits(t *testing.T) {
	t.Parallel()
	raw := func(resp string) func(ctx context.Context, c net.Conn) {
		return func(ctx context.Context, c net.Conn) {
			readRequest(c)
			c.Write([]byte(resp))
			c.Close()
		}
	}
	hint := "HTTP/1.1 103 Early Hints\r\nLink: </" + strings.Repeat("a", 900) + ">; rel=preload\r\n\r\n"
	tests := []struct {
		name   string
		resp   string
		expect []config.StatusRange
		want   Reason
		msg    string
	}{
		{"101 unasked is final", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", nil, ReasonStatus, "status 101"},
		{"101 expected", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", []config.StatusRange{{Low: 101, High: 101}}, ReasonOK, "status 101"},
		{"60 hints within the limit", strings.Repeat(hint, 60) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", nil, ReasonOK, "status 200"},
		{"80 hints past the limit", strings.Repeat(hint, 80) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", nil, ReasonProtocol, "limit of 65536 bytes"},
		{"102 then 204", "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", nil, ReasonOK, "status 204"},
	}
	for _, tt := range tests {
		ap := rawServer(t, raw(tt.resp))
		c := checkFor("raw1xx", config.ProtocolHTTP, ap)
		c.ExpectStatus = tt.expect
		r := loopbackProber(ProberOptions{}).Probe(context.Background(), &c)
		if r.Reason != tt.want || !strings.Contains(r.Message, tt.msg) {
			t.Errorf("%s: %s (%s), want %s with %q", tt.name, r.Reason, r.Message, tt.want, tt.msg)
		}
	}
}

// chunked writes body as HTTP/1.1 chunks of size bytes, each with the chunk extension ext.
func chunked(body string, size int, ext string) string {
	var b strings.Builder
	for len(body) > 0 {
		n := min(size, len(body))
		fmt.Fprintf(&b, "%x%s\r\n%s\r\n", n, ext, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// TestBodyFraming checks that framing never passes for a missing match: tiny chunks with
// extensions that net/http's chunked reader accepts are read to the match (they used to stop
// at a raw 80 KiB cap, reported as "not in the first 5,120 bytes"), and framing it refuses
// is a protocol error.
func TestBodyFraming(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 5000) + "needle" + strings.Repeat("y", 1000)
	tests := []struct {
		name string
		body string
		want Reason
		msg  string
	}{
		{"one-byte chunks with 14-byte extensions", chunked(body, 1, ";e="+strings.Repeat("v", 11)), ReasonOK, "status 200"},
		{"one-byte chunks with 40-byte extensions", chunked(body, 1, ";e="+strings.Repeat("v", 37)), ReasonProtocol, "too much non-data"},
		{"64-byte chunks with trailers", strings.TrimSuffix(chunked(body, 64, ""), "\r\n") + "X-Trailer: 1\r\n\r\n", ReasonOK, "status 200"},
		{"match split across chunks", chunked("hay hay nee"+"dle", 4, ""), ReasonOK, "status 200"},
		{"needle after 5,120 bytes", chunked(strings.Repeat("x", 5115)+"needle", 1000, ""), ReasonBodyMismatch, "not in the first 5120 bytes"},
	}
	for _, tt := range tests {
		ap := rawServer(t, func(ctx context.Context, c net.Conn) {
			readRequest(c)
			c.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + tt.body))
			c.Close()
		})
		c := checkFor("framing", config.ProtocolHTTP, ap)
		c.BodyMatch = "needle"
		r := loopbackProber(ProberOptions{}).Probe(context.Background(), &c)
		if r.Reason != tt.want || !strings.Contains(r.Message, tt.msg) {
			t.Errorf("%s: %s (%s), want %s with %q", tt.name, r.Reason, r.Message, tt.want, tt.msg)
		}
	}
}

// TestContentCoding checks that a probe asks for the body as it is, and that a body
// compressed anyway is matched after decompression.
func TestContentCoding(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte("compressed needle"))
	zw.Close()
	ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		switch r.URL.Path {
		case "/gzip": // compressed although the probe asked for identity
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(zipped.Bytes())
		case "/br":
			w.Header().Set("Content-Encoding", "br")
			w.Write([]byte{0x0b, 0x02, 0x80})
		case "/gzip-empty":
			w.Header().Set("Content-Encoding", "gzip")
		}
	})
	p := loopbackProber(ProberOptions{})
	tests := []struct {
		path string
		want Reason
	}{
		{"/gzip", ReasonOK},
		{"/br", ReasonProtocol},
		{"/gzip-empty", ReasonBodyMismatch},
	}
	for _, tt := range tests {
		c := checkFor("coding", config.ProtocolHTTP, ap)
		c.Path, c.BodyMatch = tt.path, "needle"
		if r := p.Probe(context.Background(), &c); r.Reason != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.path, r.Reason, r.Message, tt.want)
		}
	}
	c := checkFor("coding", config.ProtocolHTTP, ap)
	c.Path, c.Headers = "/gzip", map[string]string{"accept-encoding": "gzip"}
	c.BodyMatch = "needle"
	if r := p.Probe(context.Background(), &c); !r.Healthy {
		t.Errorf("gzip asked for by the check: %s (%s)", r.Reason, r.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"identity", "identity", "identity", "gzip"}
	if strings.Join(asked, ",") != strings.Join(want, ",") {
		t.Errorf("Accept-Encoding sent: %q, want %q", asked, want)
	}
}

// TestResponseHeadLimit checks the documented head limit: a large head within it passes, and
// one past it fails with a message that names the limit, not the server's syntax.
func TestResponseHeadLimit(t *testing.T) {
	t.Parallel()
	ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := 1000
		if r.URL.Path == "/huge" {
			n = 3000
		}
		for i := range n {
			w.Header().Add("Set-Cookie", fmt.Sprintf("c%d=%s", i, strings.Repeat("z", 10)))
		}
		w.Write([]byte("ok"))
	})
	p := loopbackProber(ProberOptions{})
	c := checkFor("head", config.ProtocolHTTP, ap)
	if r := p.Probe(context.Background(), &c); !r.Healthy || r.Protocol != "http/1.1" {
		t.Errorf("1,000 Set-Cookie headers (about 30 KB): %s (%s) over %q", r.Reason, r.Message, r.Protocol)
	}
	c.Path = "/huge"
	want := fmt.Sprintf("limit of %d bytes", MaxResponseHead)
	if r := p.Probe(context.Background(), &c); r.Reason != ReasonProtocol || !strings.Contains(r.Message, want) {
		t.Errorf("3,000 Set-Cookie headers (about 90 KB): %s (%s), want protocol with %q", r.Reason, r.Message, want)
	}
}
