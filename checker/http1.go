package checker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// errHeadTooLarge ends a response head that went past MaxResponseHead.
var errHeadTooLarge = fmt.Errorf("response head over the checker's limit of %d bytes (status lines and headers, with any 1xx responses before them)", MaxResponseHead)

// errFramingTooLarge ends a body whose framing went past maxBodyFraming.
var errFramingTooLarge = fmt.Errorf("body framing took over %d bytes to deliver the first %d bytes of the body", maxBodyFraming, config.BodyMatchLimit)

// errH2Frame: a server answered an HTTP/1.1 request with an HTTP/2 frame, and the probe
// has no other protocol to offer (http checks do not speak h2c).
var errH2Frame = errors.New("the server answered an HTTP/1.1 request with an HTTP/2 frame")

// wantsH2 ends an HTTP/1.1 exchange over TLS whose server showed that it speaks only HTTP/2:
// it refused http/1.1 in the handshake (no_application_protocol), or it chose no protocol
// and then closed the connection (FIN or reset) without a byte of response, as Go's and
// gRPC's servers do when h2 is all they speak, or answered with an HTTP/2 frame.
type wantsH2 struct{ why string }

func (e *wantsH2) Error() string { return "checker: the server speaks only HTTP/2: " + e.why }

// errStale ends an exchange on a kept connection that failed before the first byte of a
// response, or whose response was a 408: the server closed it while it was idle. The probe
// runs again on a fresh one.
var errStale = errors.New("checker: the kept connection was closed before a response")

// appendRequest writes the request of h to b: HTTP/1.1, the body asked for as it is (no
// content coding), and, unless keep is set, a connection that the server is asked to close.
func (h *hop) appendRequest(b []byte, c *config.Check, userAgent string, keep bool) []byte {
	b = append(b, h.method...)
	b = append(b, ' ')
	b = append(b, h.target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, h.hostHeader...)
	ua, ae, accept := true, true, true
	for k, v := range c.Headers {
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Connection") {
			continue
		}
		ua = ua && !strings.EqualFold(k, "User-Agent")
		ae = ae && !strings.EqualFold(k, "Accept-Encoding")
		accept = accept && !strings.EqualFold(k, "Accept")
		b = append(b, "\r\n"...)
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, v...)
	}
	if ua {
		b = append(b, "\r\nUser-Agent: "...)
		b = append(b, userAgent...)
	}
	if ae {
		b = append(b, "\r\nAccept-Encoding: identity"...)
	}
	if accept {
		b = append(b, "\r\nAccept: */*"...)
	}
	if keep {
		return append(b, "\r\n\r\n"...)
	}
	return append(b, "\r\nConnection: close\r\n\r\n"...)
}

// h1Mode is how an HTTP/1.1 exchange runs.
type h1Mode struct {
	// mayBeH2: the server chose no protocol by ALPN, so that a server that shows it speaks
	// only HTTP/2 ends the exchange with *wantsH2.
	mayBeH2 bool
	// keep: the request leaves the connection open, and the exchange says whether the
	// connection may serve another request.
	keep bool
	// reused: the connection served an earlier probe; a close before the first byte of a
	// response ends the exchange with errStale.
	reused bool
}

// exchangeH1 sends h's request over HTTP/1.1 on rw and judges the response. It reads past
// interim responses (interim) to the final one, all of their heads together within
// MaxResponseHead. kept says that the connection may serve another request (only with
// m.keep): the final response keeps it open and was read to its end, with nothing after it.
func (p *Prober) exchangeH1(c *config.Check, h *hop, rw net.Conn, m h1Mode, res *Result) (loc string, kept bool, err error) {
	buf := p.buffer()
	defer p.putBuffer(buf)
	*buf = h.appendRequest(*buf, c, p.userAgent, m.keep)
	if _, err := rw.Write(*buf); err != nil {
		if m.reused {
			return "", false, fmt.Errorf("%w: %w", errStale, err)
		}
		if m.mayBeH2 && closedEarly(err) {
			return "", false, &wantsH2{"it chose no protocol by ALPN and closed the connection before an HTTP/1.1 request"}
		}
		return "", false, &phaseError{phaseWrite, err}
	}
	lr := &limitedReader{r: rw, n: MaxResponseHead, err: errHeadTooLarge}
	br := p.reader(lr)
	defer p.putReader(br)
	first, err := br.Peek(1)
	if err != nil {
		if m.reused && closedEarly(err) {
			return "", false, fmt.Errorf("%w: %w", errStale, err)
		}
		if m.mayBeH2 && closedEarly(err) {
			return "", false, &wantsH2{"it chose no protocol by ALPN and closed an HTTP/1.1 connection without a byte of response"}
		}
		return "", false, &phaseError{phaseRead, err}
	}
	res.Timings.FirstByte = time.Since(res.Start)
	if first[0] == 0 && isH2Frame(br) {
		if m.mayBeH2 {
			return "", false, &wantsH2{"it answered HTTP/1.1 with an HTTP/2 frame"}
		}
		return "", false, &phaseError{phaseRead, errH2Frame}
	}
	var req *http.Request
	if h.method == http.MethodHead {
		req = &http.Request{Method: http.MethodHead}
	}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(br, req)
		if err != nil {
			if lr.n <= 0 {
				err = errHeadTooLarge // whatever the parser made of the cut
			}
			return "", false, &phaseError{phaseRead, err}
		}
		if !interim(resp.StatusCode) {
			break
		}
	}
	if m.reused && resp.StatusCode == http.StatusRequestTimeout {
		// What a server sends on a connection it closes for idling, before our request
		// came (as net/http's client also takes it); not an answer to this probe.
		return "", false, fmt.Errorf("%w: status 408", errStale)
	}
	res.Protocol = http1Name(resp)
	lr.n, lr.err = maxBodyFraming, errFramingTooLarge
	loc, err = p.judge(c, resp, (*buf)[:0], res)
	if err != nil || !m.keep || resp.StatusCode < 200 || resp.Close || !resp.ProtoAtLeast(1, 1) {
		return loc, false, err
	}
	return loc, drained(resp, br, lr, (*buf)[:cap(*buf)]), nil
}

// drained reads what is left of resp's body, but only from what br holds already (a body
// still arriving is not waited for), and reports whether it ended there with nothing after
// it, so that the connection is at the start of the next response. scratch is space to read
// into.
func drained(resp *http.Response, br *bufio.Reader, lr *limitedReader, scratch []byte) bool {
	lr.n, lr.err = 0, errNotBuffered
	for {
		_, err := resp.Body.Read(scratch)
		if err == io.EOF {
			return br.Buffered() == 0
		}
		if err != nil {
			return false
		}
	}
}

// errNotBuffered stops a read past what a bufio.Reader holds (drained).
var errNotBuffered = errors.New("checker: not buffered")

// interim reports whether a response of status code is an interim one, which a final one
// follows: 1xx, but 101, which ends HTTP/1.1 on the connection. A code below 100 (099 is
// three digits too) is a final response, as net/http reads it.
func interim(code int) bool {
	return code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols
}

// closedEarly reports whether err says the server closed the connection, with a FIN or, when
// it closed with our request unread, a reset.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// http1Name is the protocol a response says it speaks, as ALPN names it: http/1.1 or
// http/1.0.
func http1Name(resp *http.Response) string {
	switch {
	case resp.ProtoMajor == 1 && resp.ProtoMinor == 1:
		return "http/1.1"
	case resp.ProtoMajor == 1 && resp.ProtoMinor == 0:
		return "http/1.0"
	}
	return strings.ToLower(resp.Proto)
}

// isH2Frame reports whether br starts with an HTTP/2 SETTINGS frame on stream 0: what a
// server that speaks only HTTP/2 sends first. It peeks only when the first byte is 0, which no
// HTTP/1 status line starts with.
func isH2Frame(br *bufio.Reader) bool {
	b, err := br.Peek(9)
	if err != nil {
		return false
	}
	return b[0] == 0 && b[3] == 0x4 && b[5]&0x7f == 0 && b[6] == 0 && b[7] == 0 && b[8] == 0
}

// limitedReader reads at most n bytes from r, then fails with err.
type limitedReader struct {
	r   io.Reader
	n   int64
	err error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, l.err
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
