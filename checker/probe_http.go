package checker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// hop is one HTTP request of a probe: the first one, or one per redirect followed.
type hop struct {
	https      bool
	host       string // dialled (resolved at each probe if a name)
	port       int
	target     string // request target: path and query
	hostHeader string
	sni        string
	method     string
}

// firstHop is the request c describes.
func firstHop(c *config.Check) hop {
	h := hop{
		https:  c.Protocol == config.ProtocolHTTPS,
		host:   c.Target.Host,
		port:   c.Target.Port,
		target: c.Path,
		method: c.Method,
	}
	if h.port == 0 {
		h.port = defaultPort(h.https)
	}
	if h.target == "" {
		h.target = "/"
	}
	if h.method == "" {
		h.method = http.MethodGet
	}
	h.hostHeader = c.HostHeader
	if h.hostHeader == "" {
		h.hostHeader = authority(h.host, h.port, h.https)
	}
	h.sni = c.SNI
	if h.sni == "" {
		h.sni = stripPort(h.hostHeader)
	}
	return h
}

func defaultPort(https bool) int {
	if https {
		return 443
	}
	return 80
}

// authority writes host and port as a Host header does: the port only when not the default.
func authority(host string, port int, https bool) string {
	if port == defaultPort(https) {
		if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
			return "[" + host + "]"
		}
		return host
	}
	return hostPort(host, port)
}

// stripPort returns the host of a Host header value, without port or brackets.
func stripPort(hostHeader string) string {
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostHeader, "["), "]")
}

func (h *hop) scheme() string {
	if h.https {
		return "https"
	}
	return "http"
}

// key identifies the hop's URL, for redirect loop detection.
func (h *hop) key() string {
	return h.scheme() + "://" + hostPort(h.host, h.port) + h.target + " host=" + h.hostHeader
}

// follow returns the hop a redirect with Location loc and status code leads to.
func (h *hop) follow(loc string, code int) (hop, error) {
	base, err := url.Parse(h.scheme() + "://" + hostPort(h.host, h.port) + h.target)
	if err != nil {
		return hop{}, fmt.Errorf("checker: redirect base: %w", err)
	}
	ref, err := url.Parse(loc)
	if err != nil {
		return hop{}, fmt.Errorf("checker: status %d with invalid Location %q: %w", code, loc, err)
	}
	u := base.ResolveReference(ref)
	if u.Scheme != "http" && u.Scheme != "https" {
		return hop{}, fmt.Errorf("checker: status %d redirects to unsupported scheme %q", code, u.Scheme)
	}
	next := hop{https: u.Scheme == "https", host: u.Hostname(), method: h.method, target: u.RequestURI()}
	if next.host == "" {
		return hop{}, fmt.Errorf("checker: status %d redirects to %q without a host", code, loc)
	}
	next.port = defaultPort(next.https)
	if p := u.Port(); p != "" {
		if next.port, err = strconv.Atoi(p); err != nil || next.port < 1 || next.port > 65535 {
			return hop{}, fmt.Errorf("checker: status %d redirects to invalid port %q", code, p)
		}
	}
	if code == http.StatusSeeOther && h.method != http.MethodHead {
		next.method = http.MethodGet
	}
	if u.Host == base.Host && next.https == h.https {
		next.hostHeader, next.sni = h.hostHeader, h.sni
	} else {
		next.hostHeader = authority(next.host, next.port, next.https)
		next.sni = next.host
	}
	return next, nil
}

// isRedirect reports whether code is a redirect that carries a Location.
func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// statusExpected reports whether code is in ranges (200-399 when there are none).
func statusExpected(ranges []config.StatusRange, code int) bool {
	if len(ranges) == 0 {
		return code >= 200 && code <= 399
	}
	for _, r := range ranges {
		if r.Contains(code) {
			return true
		}
	}
	return false
}

func expectedString(ranges []config.StatusRange) string {
	if len(ranges) == 0 {
		return "200-399"
	}
	s := make([]string, len(ranges))
	for i, r := range ranges {
		s[i] = r.String()
	}
	return strings.Join(s, ",")
}

// probeHTTP runs an HTTP or HTTPS probe: one request, and one more per redirect followed
// when the check asks for it, each hop resolved and checked like the first.
func (p *Prober) probeHTTP(ctx context.Context, c *config.Check, res *Result) {
	if err := validateHTTP(c); err != nil {
		res.fail(ReasonError, err.Error())
		return
	}
	h := firstHop(c)
	var visited []string
	for {
		loc, err := p.exchange(ctx, c, &h, res)
		if err != nil {
			if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
				// The deadline cut the exchange short; the error it caused may look like
				// something else (a status line cut in the middle reads as malformed).
				err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
			}
			res.fail(classify(err))
			return
		}
		if loc == "" {
			return // exchange judged the response
		}
		if res.Redirects >= p.maxRedirects {
			res.fail(ReasonTooManyRedirects, fmt.Sprintf("more than %d redirects", p.maxRedirects))
			return
		}
		next, err := h.follow(loc, res.StatusCode)
		if err != nil {
			res.fail(ReasonBadRedirect, err.Error())
			return
		}
		if visited == nil {
			visited = append(visited, h.key())
		}
		k := next.key()
		if slices.Contains(visited, k) {
			res.fail(ReasonRedirectLoop, fmt.Sprintf("redirect %d to %s://%s%s was already visited",
				res.Redirects+1, next.scheme(), next.hostHeader, next.target))
			return
		}
		visited = append(visited, k)
		res.Redirects++
		h = next
	}
}

// exchange sends h's request and reads the response. It returns the redirect location to
// follow, or "" once it has judged the response into res, or an error for the caller to
// classify. An HTTPS exchange offers HTTP/1.1 by ALPN; when the server shows that it speaks
// only HTTP/2 (see wantsH2), it runs again on a new connection offering h2, and the Prober
// remembers the server (h2Memory) so that the next probes offer it h2 alone.
func (p *Prober) exchange(ctx context.Context, c *config.Check, h *hop, res *Result) (string, error) {
	ap, err := p.resolve(ctx, h.host, h.port, c.IPVersion, res)
	if err != nil {
		return "", err
	}
	if c.HTTP2 {
		return p.exchangePrior(ctx, c, h, ap, res)
	}
	t := tlsTarget{ap, h.sni}
	if h.https && p.h2only.knows(t, time.Now()) {
		loc, err := p.exchangeOn(ctx, c, h, ap, true, res)
		if err == nil || !isNoALPN(err) {
			if err != nil {
				err = fmt.Errorf("%w (over h2, which the server spoke alone at an earlier probe)", err)
			}
			return loc, err
		}
		// It refuses h2 now: forget it, and start over as with any server.
		p.h2only.forget(t)
	}
	loc, err := p.exchangeOn(ctx, c, h, ap, false, res)
	var want *wantsH2
	if !errors.As(err, &want) {
		return loc, err
	}
	loc, err = p.exchangeOn(ctx, c, h, ap, true, res)
	if err != nil {
		err = fmt.Errorf("%w (over h2, offered because %s)", err, want.why)
	}
	return loc, err
}

// errNoH2 ends the exchange of a check that asks for HTTP/2 (http2) with a TLS server that
// chose no protocol by ALPN.
var errNoH2 = errors.New("checker: the server chose no protocol by ALPN, and the check asks for h2 (http2)")

// exchangePrior is the exchange of a check that asks for HTTP/2 (http2): on a fresh
// connection to ap, over TLS offering h2 alone, which the server must agree to, or, for an
// http hop, h2c with prior knowledge.
func (p *Prober) exchangePrior(ctx context.Context, c *config.Check, h *hop, ap netip.AddrPort, res *Result) (string, error) {
	conn, err := p.connect(ctx, "tcp", ap, res)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	stop := bindDeadline(ctx, conn)
	defer stop()
	if !h.https {
		return p.exchangeH2(ctx, c, h, conn, res)
	}
	tc, err := p.handshake(conn, c, h.sni, []string{"h2"}, res)
	switch {
	case err != nil && isNoALPN(err):
		return "", fmt.Errorf("%w (the server refused h2, which the check asks for: http2)", err)
	case err != nil:
		return "", err
	case tc.ConnectionState().NegotiatedProtocol != "h2":
		return "", &phaseError{phaseRead, errNoH2}
	}
	return p.exchangeH2(ctx, c, h, tc, res)
}

// exchangeOn is one exchange on one connection to ap, HTTP/1.1 or, when h2 is set, HTTP/2
// over TLS. An HTTP/1.1 exchange that may reuse a connection (mayReuse) runs on the one
// the check's previous probe kept, if there is one, and keeps its own for the next probe
// when the response allows it (reuse.go).
func (p *Prober) exchangeOn(ctx context.Context, c *config.Check, h *hop, ap netip.AddrPort, h2 bool, res *Result) (string, error) {
	keep := !h2 && p.mayReuse(c, h, res)
	key := idleKey{c, ap}
	if keep {
		if ic, ok := p.idle.take(key, p.clock()); ok {
			if loc, err, stale := p.exchangeReused(ctx, c, h, key, ic, res); !stale {
				return loc, err
			}
		}
	}
	dialled := p.clock()
	conn, err := p.connect(ctx, "tcp", ap, res)
	if err != nil {
		return "", err
	}
	ic := idleConn{conn: conn, dialled: dialled}
	stop := bindDeadline(ctx, conn)
	loc, kept, err := p.exchangeFresh(ctx, c, h, h2, keep, &ic, res)
	p.release(c, key, ic, stop, kept && err == nil)
	return loc, err
}

// exchangeFresh runs the exchange of exchangeOn on a connection just opened, ic.conn (which
// becomes the TLS connection over it for https). kept says that the connection may serve
// the check's next probe.
func (p *Prober) exchangeFresh(ctx context.Context, c *config.Check, h *hop, h2, keep bool, ic *idleConn, res *Result) (string, bool, error) {
	if !h.https {
		return p.exchangeH1(c, h, ic.conn, h1Mode{keep: keep}, res)
	}
	alpn := []string{"http/1.1"}
	if h2 {
		alpn = []string{"h2"}
	}
	tc, err := p.handshake(ic.conn, c, h.sni, alpn, res)
	switch {
	case err != nil && !h2 && isNoALPN(err):
		return "", false, &wantsH2{"the server refused HTTP/1.1 in the TLS handshake"}
	case err != nil:
		return "", false, err
	}
	ic.conn = tc
	t := tlsTarget{res.Address, h.sni}
	switch np := tc.ConnectionState().NegotiatedProtocol; {
	case np == "h2":
		if h2 {
			p.h2only.remember(t, time.Now())
		}
		loc, err := p.exchangeH2(ctx, c, h, tc, res)
		return loc, false, err
	case h2:
		p.h2only.forget(t) // it chose no protocol: HTTP/1.1 follows
	}
	return p.exchangeH1(c, h, tc, h1Mode{mayBeH2: !h2 && tc.ConnectionState().NegotiatedProtocol == "", keep: keep}, res)
}

// exchangeReused runs an HTTP/1.1 exchange on ic, a connection an earlier probe of the check
// kept. stale says that it failed before the first byte of a response (or could not be used
// at all): the caller then runs the exchange on a fresh connection, and res holds nothing
// of this attempt.
func (p *Prober) exchangeReused(ctx context.Context, c *config.Check, h *hop, key idleKey, ic idleConn, res *Result) (loc string, err error, stale bool) {
	if !certsValid(ic.conn, time.Now()) {
		_ = ic.conn.Close()
		return "", nil, true
	}
	stop := bindDeadline(ctx, ic.conn)
	if tc, ok := ic.conn.(*tls.Conn); ok {
		if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
			res.CertNotAfter = st.PeerCertificates[0].NotAfter
		}
	}
	loc, kept, err := p.exchangeH1(c, h, ic.conn, h1Mode{keep: true, reused: true}, res)
	if errors.Is(err, errStale) {
		stop()
		_ = ic.conn.Close()
		res.CertNotAfter = time.Time{}
		return "", nil, true
	}
	p.release(c, key, ic, stop, kept && err == nil)
	return loc, err, false
}

// release keeps ic for the check's next probe when keep says it may serve one and the
// probe's deadline has not touched it (stop, of bindDeadline, stops the cancellation hook);
// otherwise it closes it.
func (p *Prober) release(c *config.Check, key idleKey, ic idleConn, stop func() bool, keep bool) {
	if stop() && keep && ic.conn.SetDeadline(time.Time{}) == nil {
		now := p.clock()
		ic.expires = now.Add(idleFor(c))
		p.idle.put(key, ic, now)
		return
	}
	_ = ic.conn.Close()
}

// CloseIdle closes the connections kept for later probes.
func (p *Prober) CloseIdle() { p.idle.closeAll() }

// bindDeadline ends every read and write on conn at ctx's deadline, or at once when ctx is
// cancelled; it returns the function that stops the cancellation hook.
func bindDeadline(ctx context.Context, conn net.Conn) func() bool {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl) // slow drips and silent servers end at the timeout
	}
	return context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
}

// judge judges a final response into res, or returns the redirect location to follow. The
// caller has bounded what reading resp.Body may cost; buf is scratch space.
func (p *Prober) judge(c *config.Check, resp *http.Response, buf []byte, res *Result) (string, error) {
	res.StatusCode = resp.StatusCode
	if c.FollowRedirects && isRedirect(resp.StatusCode) {
		loc := resp.Header.Get("Location")
		if loc == "" {
			res.fail(ReasonBadRedirect, fmt.Sprintf("status %d without a Location", resp.StatusCode))
		}
		return loc, nil
	}
	if !statusExpected(c.ExpectStatus, resp.StatusCode) {
		res.fail(ReasonStatus, fmt.Sprintf("status %d (expected %s)", resp.StatusCode, expectedString(c.ExpectStatus)))
		return "", nil
	}
	if c.BodyMatch != "" {
		found, err := p.matchResponse(resp, []byte(c.BodyMatch), buf)
		if err != nil {
			return "", &phaseError{phaseBody, err}
		}
		if !found {
			res.fail(ReasonBodyMismatch, fmt.Sprintf("status %d but %q not in the first %d bytes of the body",
				resp.StatusCode, c.BodyMatch, config.BodyMatchLimit))
			return "", nil
		}
	}
	res.Healthy, res.Reason = true, ReasonOK
	res.Message = "status " + strconv.Itoa(resp.StatusCode)
	return "", nil
}
