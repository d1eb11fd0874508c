package checker

import (
	"bufio"
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Limits of one probe.
const (
	// DefaultMaxRedirects is how many redirects a check that follows them may follow.
	DefaultMaxRedirects = 10
	// MaxResponseHead is the most bytes an HTTP response's head may take: the status lines
	// and headers of the final response and of every interim (1xx) response before it, all
	// together. A longer head fails the probe with reason protocol, and the message names
	// this limit. Over HTTP/2 it is the advertised header list size (each field counted as
	// its name, value and 32 bytes).
	MaxResponseHead = 64 << 10
	// maxBodyFraming is the most bytes read from the connection to deliver the first
	// config.BodyMatchLimit bytes of a body. It is above what HTTP/1.1 chunk framing can
	// take within net/http's own rule (at most 16 bytes of framing per chunk, plus twice the
	// chunk's data, plus 16 KiB in all; so at most 21 bytes per data byte with one-byte
	// chunks), one chunk line (4 KiB) and a read-ahead buffer; what goes past it is reported
	// as a framing problem, never as a missing match.
	maxBodyFraming = 21*config.BodyMatchLimit + 16<<10 + 4<<10 + 4<<10
	// defaultTimeout bounds a probe whose check has no timeout.
	defaultTimeout = 4 * time.Second
)

// ProberOptions configure a Prober. The zero value probes through the real network with the
// default address policy (public addresses only).
type ProberOptions struct {
	// Dialer opens connections; default a net.Dialer whose Control applies Addresses.
	Dialer Dialer
	// Resolver resolves host names at each probe; default net.DefaultResolver.
	Resolver Resolver
	// Addresses is the address policy applied to every address dialled.
	Addresses AddressPolicy
	// RootCAs verifies the certificates of TLS targets (https, grpc with TLS) whose check has
	// no CA bundle of its own (tls_ca); nil means the system's roots.
	RootCAs *x509.CertPool
	// UserAgent is sent with every HTTP request; default "vigil-checker".
	UserAgent string
	// MaxRedirects bounds redirects followed; default DefaultMaxRedirects.
	MaxRedirects int
}

// Prober runs single probes. It is safe for concurrent use. Its only state is what makes
// later probes cheaper: connections kept for a check's next probe (reuse.go) and the TLS
// servers known to speak only HTTP/2; CloseIdle closes the kept connections.
type Prober struct {
	dialer       Dialer
	resolver     Resolver
	guard        *guard
	roots        *x509.CertPool
	userAgent    string
	maxRedirects int
	readers      sync.Pool // *bufio.Reader
	buffers      sync.Pool // *[]byte, request and body buffers
	gzips        sync.Pool // *gzip.Reader, for bodies compressed unasked
	bundles      bundleCache
	h2           *http.Transport // HTTP/2 over the probes' own connections
	idle         idleConns       // HTTP/1.1 connections kept for the checks' next probes
	h2only       h2Memory        // TLS servers that speak only HTTP/2 (h2only.off: none, for benchmarks)
	// now, when set, is the clock of kept connections (tests); nil: time.Now.
	now func() time.Time
}

// NewProber returns a Prober with opts' defaults applied.
func NewProber(opts ProberOptions) *Prober {
	p := &Prober{
		dialer:       opts.Dialer,
		resolver:     opts.Resolver,
		guard:        newGuard(opts.Addresses),
		roots:        opts.RootCAs,
		userAgent:    opts.UserAgent,
		maxRedirects: opts.MaxRedirects,
		h2:           newH2Transport(),
	}
	p.idle.limit = idleLimit(openFileLimit())
	if p.dialer == nil {
		p.dialer = defaultDialer(p.guard)
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.userAgent == "" {
		p.userAgent = "vigil-checker"
	}
	if p.maxRedirects <= 0 {
		p.maxRedirects = DefaultMaxRedirects
	}
	return p
}

// Probe runs one probe of c and returns its result. It returns within c's timeout (or
// earlier if ctx ends); it never panics on what a target sends.
func (p *Prober) Probe(ctx context.Context, c *config.Check) Result {
	res := Result{Start: time.Now()}
	timeout := c.Timeout.Std()
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch c.Protocol {
	case config.ProtocolTCP:
		p.probeTCP(ctx, c, &res)
	case config.ProtocolHTTP, config.ProtocolHTTPS:
		p.probeHTTP(ctx, c, &res)
	case config.ProtocolGRPC:
		p.probeGRPC(ctx, c, &res)
	case config.ProtocolDNS:
		p.probeDNS(ctx, c, &res)
	default:
		res.fail(ReasonError, "checker: protocol "+string(c.Protocol)+" is not probed")
	}
	res.Timings.Total = time.Since(res.Start)
	return res
}

// reader returns a pooled bufio.Reader reading from r.
func (p *Prober) reader(r *limitedReader) *bufio.Reader {
	if br, ok := p.readers.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, 4096)
}

// putReader returns br to the pool, dropping its reference to the connection.
func (p *Prober) putReader(br *bufio.Reader) {
	br.Reset(nil)
	p.readers.Put(br)
}

// buffer returns a pooled byte slice of length 0.
func (p *Prober) buffer() *[]byte {
	if b, ok := p.buffers.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, 1024)
	return &b
}

// putBuffer returns b to the pool unless it grew unusually large.
func (p *Prober) putBuffer(b *[]byte) {
	if cap(*b) <= 8<<10 {
		p.buffers.Put(b)
	}
}
