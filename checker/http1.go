package checker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// errHeadTooLarge ends a response head that went past MaxResponseHead.
var errHeadTooLarge = fmt.Errorf("response head over the checker's limit of %d bytes (status lines and headers, with any 1xx responses before them)", MaxResponseHead)

// errFramingTooLarge ends a body whose framing went past maxBodyFraming.
var errFramingTooLarge = fmt.Errorf("body framing took over %d bytes to deliver the first %d bytes of the body", maxBodyFraming, config.BodyMatchLimit)

// errH2cOnly: a plain-text server answered an HTTP/1.1 request with an HTTP/2 frame.
var errH2cOnly = errors.New("the server answered with an HTTP/2 frame: it speaks only HTTP/2 without TLS (h2c), which http checks do not use")

// appendRequest writes the request of h to b: HTTP/1.1, a fresh connection that the server
// is asked to close, and the body asked for as it is (no content coding).
func (h *hop) appendRequest(b []byte, c *config.Check, userAgent string) []byte {
	b = append(b, h.method...)
	b = append(b, ' ')
	b = append(b, h.target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, h.hostHeader...)
	ua, ae := true, true
	for k, v := range c.Headers {
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Connection") {
			continue
		}
		ua = ua && !strings.EqualFold(k, "User-Agent")
		ae = ae && !strings.EqualFold(k, "Accept-Encoding")
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
	return append(b, "\r\nAccept: */*\r\nConnection: close\r\n\r\n"...)
}

// exchangeH1 sends h's request over HTTP/1.1 on rw and judges the response. It reads past
// interim responses (1xx but 101) to the final one, all of their heads together within
// MaxResponseHead.
func (p *Prober) exchangeH1(c *config.Check, h *hop, rw net.Conn, res *Result) (string, error) {
	buf := p.buffer()
	defer p.putBuffer(buf)
	*buf = h.appendRequest(*buf, c, p.userAgent)
	if _, err := rw.Write(*buf); err != nil {
		return "", &phaseError{phaseWrite, err}
	}
	lr := &limitedReader{r: rw, n: MaxResponseHead, err: errHeadTooLarge}
	br := p.reader(lr)
	defer p.putReader(br)
	first, err := br.Peek(1)
	if err != nil {
		return "", &phaseError{phaseRead, err}
	}
	res.Timings.FirstByte = time.Since(res.Start)
	if first[0] == 0 && isH2Frame(br) {
		return "", &phaseError{phaseRead, errH2cOnly}
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
			return "", &phaseError{phaseRead, err}
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	res.Protocol = http1Name(resp)
	lr.n, lr.err = maxBodyFraming, errFramingTooLarge
	return p.judge(c, resp, (*buf)[:0], res)
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
