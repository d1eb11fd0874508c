package checker

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// h2Window is the flow-control window a probe grants an HTTP/2 server, for the stream and
// the connection: it bounds what a probe buffers of a body it reads only the start of.
const h2Window = 64 << 10

// connKey is the context key under which a probe hands its own connection to the HTTP/2
// transport.
type connKey struct{}

// newH2Transport returns the transport a Prober speaks HTTP/2 with. It never dials: each
// client connection runs on a probe's own connection (resolved, checked and dialled as every
// probe's is), handed over in the context. It never pools, never asks for compression, and
// advertises MaxResponseHead as its header list size.
func newH2Transport() *http.Transport {
	var protos http.Protocols
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(true)
	take := func(ctx context.Context, _, _ string) (net.Conn, error) {
		if c, ok := ctx.Value(connKey{}).(net.Conn); ok {
			return c, nil
		}
		return nil, errors.New("checker: HTTP/2 without a probe's connection")
	}
	return &http.Transport{
		Protocols:              &protos,
		DialContext:            take,
		DialTLSContext:         take,
		DisableCompression:     true,
		MaxResponseHeaderBytes: MaxResponseHead,
		HTTP2: &http.HTTP2Config{
			MaxReceiveBufferPerStream:     h2Window,
			MaxReceiveBufferPerConnection: h2Window,
		},
	}
}

// roundTripH2 sends req over HTTP/2 on conn: TLS with h2 negotiated, or plain text (h2c). It
// returns the response and the function that closes it and the client connection; the
// caller reads the body in between.
func (p *Prober) roundTripH2(ctx context.Context, conn net.Conn, req *http.Request, res *Result) (*http.Response, func(), error) {
	proto := "h2"
	if _, ok := conn.(*tls.Conn); !ok {
		proto = "h2c"
	}
	// The transport speaks HTTP/2 with prior knowledge on whatever it is handed: over TLS,
	// the probe has agreed on h2 by ALPN already, and handing over a *tls.Conn itself would
	// hide the frames from the watch.
	watch := &h2Watch{Conn: conn}
	ctx = context.WithValue(ctx, connKey{}, net.Conn(watch))
	cc, err := p.h2.NewClientConn(ctx, "http", conn.RemoteAddr().String())
	if err != nil {
		return nil, nil, &phaseError{phaseWrite, err}
	}
	var first atomic.Int64
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { first.CompareAndSwap(0, int64(time.Since(res.Start))) }}
	resp, err := cc.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	res.Timings.FirstByte = time.Duration(first.Load())
	if err != nil {
		cc.Close()
		if strings.Contains(err.Error(), "header list larger than advertised limit") || watch.headTooLarge() {
			err = errHeadTooLarge // net/http exports no error value for it (h2watch.go)
		}
		return nil, nil, &phaseError{phaseRead, err}
	}
	res.Protocol = proto
	return resp, func() { resp.Body.Close(); cc.Close() }, nil
}

// exchangeH2 sends h's request over HTTP/2 on conn (a *tls.Conn with h2 agreed, or, for an
// http hop, plain text: h2c) and judges the response by the same rules as over HTTP/1.1.
func (p *Prober) exchangeH2(ctx context.Context, c *config.Check, h *hop, conn net.Conn, res *Result) (string, error) {
	u, err := url.Parse(h.scheme() + "://" + h.hostHeader + h.target)
	if err != nil {
		return "", &phaseError{phaseWrite, err}
	}
	req := &http.Request{Method: h.method, URL: u, Host: h.hostHeader, Header: h.header(c, p.userAgent)}
	resp, done, err := p.roundTripH2(ctx, conn, req, res)
	if err != nil {
		return "", err
	}
	defer done()
	buf := p.buffer()
	defer p.putBuffer(buf)
	return p.judge(c, resp, (*buf)[:0], res)
}

// header is the request header of h as an http.Header, for HTTP/2: the check's headers, the
// User-Agent, and the body asked for as it is; no Host or Connection.
func (h *hop) header(c *config.Check, userAgent string) http.Header {
	hd := make(http.Header, len(c.Headers)+3)
	for k, v := range c.Headers {
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Connection") {
			continue
		}
		hd.Add(k, v)
	}
	if hd.Get("User-Agent") == "" {
		hd.Set("User-Agent", userAgent)
	}
	if hd.Get("Accept-Encoding") == "" {
		hd.Set("Accept-Encoding", "identity")
	}
	if hd.Get("Accept") == "" {
		hd.Set("Accept", "*/*")
	}
	return hd
}
