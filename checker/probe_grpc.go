package checker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// The gRPC health protocol (grpc.health.v1), as much of it as one call needs: the method, its
// request (HealthCheckRequest{string service = 1}) and the serving status of its response
// (HealthCheckResponse{ServingStatus status = 1}).
const (
	grpcHealthPath = "/grpc.health.v1.Health/Check"
	grpcServing    = 1
	// grpcDeadlineExceeded is the gRPC status code DEADLINE_EXCEEDED.
	grpcDeadlineExceeded = 4
	// maxGRPCMessage bounds the response message read: a HealthCheckResponse is 2 bytes.
	maxGRPCMessage = 4 << 10
)

// errGRPCFraming: the response body is not one length-prefixed, uncompressed message.
var errGRPCFraming = errors.New("the response is not one length-prefixed gRPC message")

// errClosedUnheard: the connection ended before the server sent a byte.
var errClosedUnheard = errors.New("the server closed the connection without sending a byte")

// heardConn notes whether a byte was ever read from its connection, and leaves the end of
// the exchange to the reader: a write to a connection the server closed or reset (EPIPE,
// ECONNRESET) reports success. A server that answers something other than HTTP/2 (an
// HTTP/1.1 server's "400 Bad Request" to the h2 preface) and closes would otherwise end the
// call with the write error of the client's next frame, or not, by timing: with the error
// hidden, the reader finds what the server sent, and then the connection's end.
type heardConn struct {
	net.Conn
	heard atomic.Bool // a byte was read
	ended atomic.Bool // a read found the connection closed or reset
}

func (h *heardConn) Write(b []byte) (int, error) {
	n, err := h.Conn.Write(b)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return len(b), nil
	}
	return n, err
}

func (h *heardConn) Read(b []byte) (int, error) {
	n, err := h.Conn.Read(b)
	if n > 0 {
		h.heard.Store(true)
	}
	if err != nil && closedEarly(err) {
		h.ended.Store(true)
	}
	return n, err
}

// probeGRPC calls grpc.health.v1.Health/Check on the target over HTTP/2: TLS with ALPN h2
// when the check says tls, h2c (prior knowledge) otherwise. Healthy when the call succeeds
// (grpc-status 0) and the answer is SERVING.
func (p *Prober) probeGRPC(ctx context.Context, c *config.Check, res *Result) {
	if err := p.callHealth(ctx, c, res); err != nil {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
		}
		res.fail(classify(err))
	}
}

// callHealth runs the call and judges its answer into res, or returns an error to classify.
func (p *Prober) callHealth(ctx context.Context, c *config.Check, res *Result) error {
	raw, err := p.dial(ctx, "tcp", c.Target.Host, c.Target.Port, c.IPVersion, res)
	if errors.Is(err, syscall.ECONNRESET) {
		// A server that resets what it accepts may do so while the connect completes.
		return &phaseError{phaseConnect, fmt.Errorf("%w (%w)", errClosedUnheard, err)}
	}
	if err != nil {
		return err
	}
	defer raw.Close()
	stop := bindDeadline(ctx, raw)
	defer stop()
	conn := &heardConn{Conn: raw}
	if err := p.runHealth(ctx, c, conn, res); err != nil {
		if !conn.heard.Load() && (closedEarly(err) || conn.ended.Load()) && ctx.Err() == nil {
			// Closed with a FIN or a reset, the connection ends before the server said a
			// word; which error the client sees ("unexpected EOF", "connection reset", "client
			// conn could not be established") depends only on timing.
			return &phaseError{phaseRead, fmt.Errorf("%w (%w)", errClosedUnheard, err)}
		}
		return err
	}
	return nil
}

// runHealth runs the call on conn and judges its answer into res, or returns an error to
// classify.
func (p *Prober) runHealth(ctx context.Context, c *config.Check, conn net.Conn, res *Result) error {
	g := c.GRPC
	if g == nil {
		g = &config.GRPCProbe{}
	}
	host := strings.TrimSuffix(strings.TrimPrefix(c.Target.Host, "["), "]")
	if c.SNI != "" {
		host = c.SNI
	}
	rw, scheme, err := p.grpcConn(conn, c, g, host, res)
	if err != nil {
		return err
	}
	req := p.healthCall(ctx, scheme, hostPort(host, c.Target.Port), g.Service)
	resp, done, err := p.roundTripH2(ctx, rw, req, res)
	if err != nil {
		return err
	}
	defer done()
	return judgeHealth(resp, res)
}

// grpcConn returns the connection the call runs on and its URL scheme: conn itself (h2c), or
// with g.TLS a TLS connection on it to host that agreed on h2 by ALPN.
func (p *Prober) grpcConn(conn net.Conn, c *config.Check, g *config.GRPCProbe, host string, res *Result) (net.Conn, string, error) {
	if !g.TLS {
		return conn, "http", nil
	}
	tc, err := p.handshake(conn, c, host, []string{"h2"}, res)
	if err != nil {
		return nil, "", err
	}
	if np := tc.ConnectionState().NegotiatedProtocol; np != "h2" {
		return nil, "", &phaseError{phaseTLS, fmt.Errorf("the server chose %q by ALPN, not h2: gRPC needs HTTP/2", np)}
	}
	return tc, "https", nil
}

// healthCall returns the request of a health check of service at authority, with the time
// left before ctx's deadline as its grpc-timeout.
func (p *Prober) healthCall(ctx context.Context, scheme, authority, service string) *http.Request {
	msg := healthRequest(service)
	req := &http.Request{
		Method: http.MethodPost,
		URL:    &url.URL{Scheme: scheme, Host: authority, Path: grpcHealthPath},
		Host:   authority,
		Header: http.Header{
			"Content-Type": {"application/grpc"},
			"Te":           {"trailers"},
			"User-Agent":   {p.userAgent},
		},
		Body:          io.NopCloser(bytes.NewReader(msg)),
		ContentLength: int64(len(msg)),
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		req.Header.Set("Grpc-Timeout", strconv.FormatInt(max((left+grpcTimeoutMargin(left)).Milliseconds(), 1), 10)+"m")
	}
	return req
}

// grpcTimeoutMargin is how much longer than the time left the grpc-timeout of a call says: a
// tenth, from 20 ms to 1 s. A server that gives up on the call at its grpc-timeout (grpc-go
// answers DEADLINE_EXCEEDED or resets the stream, whichever its timer reaches first) then
// does so after the probe's own deadline, so a call that hangs ends as a timeout every time,
// not as whichever of the three messages arrived first.
func grpcTimeoutMargin(left time.Duration) time.Duration {
	return min(max(left/10, 20*time.Millisecond), time.Second)
}

// judgeHealth judges the answer of a health call into res: healthy when it is HTTP 200 with
// grpc-status 0 and the status SERVING. It returns an error to classify for an answer that
// is not one of the protocol.
func judgeHealth(resp *http.Response, res *Result) error {
	res.StatusCode = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		res.fail(ReasonStatus, fmt.Sprintf("HTTP status %d: not a gRPC answer (a gRPC server answers 200)", resp.StatusCode))
		return nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/grpc") {
		return &phaseError{phaseRead, fmt.Errorf("content type %q: not a gRPC answer", ct)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 5+maxGRPCMessage+1))
	if err != nil {
		return &phaseError{phaseBody, err}
	}
	if len(body) > 5+maxGRPCMessage {
		return &phaseError{phaseBody, fmt.Errorf("%w: over %d bytes", errGRPCFraming, 5+maxGRPCMessage)}
	}
	// The status is in the trailers, or in the head of a trailers-only answer.
	st, stMsg := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if st == "" {
		st, stMsg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	switch {
	case st == "":
		return &phaseError{phaseBody, errors.New("no grpc-status in the answer's trailers")}
	case st != "0":
		code, _ := strconv.Atoi(st)
		m := "grpc-status " + st + " " + grpcCodeName(code)
		if stMsg != "" {
			if dec, err := url.PathUnescape(stMsg); err == nil {
				stMsg = dec
			}
			m += ": " + stMsg
		}
		reason := ReasonStatus
		if code == grpcDeadlineExceeded {
			// The server gave up on the call's deadline (its own, or a proxy's shorter
			// one): the call timed out, as it does when the probe's deadline fires first.
			reason = ReasonTimeout
		}
		res.fail(reason, m)
		return nil
	}
	status, err := healthStatus(body)
	if err != nil {
		return &phaseError{phaseBody, err}
	}
	if status != grpcServing {
		res.fail(ReasonStatus, "status "+servingStatusName(status)+" (expected SERVING)")
		return nil
	}
	res.Healthy, res.Reason, res.Message = true, ReasonOK, "SERVING"
	return nil
}

// healthRequest is the length-prefixed HealthCheckRequest for service: field 1, a string,
// left out when empty (the whole server).
func healthRequest(service string) []byte {
	var m []byte
	if service != "" {
		m = append(m, 0x0a) // field 1, length-delimited
		m = binary.AppendUvarint(m, uint64(len(service)))
		m = append(m, service...)
	}
	b := make([]byte, 5, 5+len(m))
	binary.BigEndian.PutUint32(b[1:], uint32(len(m)))
	return append(b, m...)
}

// healthStatus reads the serving status out of body, one length-prefixed, uncompressed
// HealthCheckResponse; fields other than status are skipped as protobuf allows.
func healthStatus(body []byte) (uint64, error) {
	if len(body) < 5 {
		return 0, errGRPCFraming
	}
	if body[0] != 0 {
		return 0, fmt.Errorf("compressed gRPC message (flag %d), which the probe did not ask for", body[0])
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if n > maxGRPCMessage || int(n) != len(body)-5 {
		return 0, fmt.Errorf("%w (%d bytes announced, %d received)", errGRPCFraming, n, len(body)-5)
	}
	m := body[5:]
	var status uint64
	for len(m) > 0 {
		key, k := binary.Uvarint(m)
		if k <= 0 {
			return 0, errors.New("malformed HealthCheckResponse")
		}
		m = m[k:]
		var v uint64
		switch key & 7 {
		case 0: // varint
			if v, k = binary.Uvarint(m); k <= 0 {
				return 0, errors.New("malformed HealthCheckResponse")
			}
		case 1: // 64-bit
			k = 8
		case 2: // length-delimited
			l, lk := binary.Uvarint(m)
			if lk <= 0 || l > uint64(len(m)-lk) {
				return 0, errors.New("malformed HealthCheckResponse")
			}
			k = lk + int(l)
		case 5: // 32-bit
			k = 4
		default:
			return 0, fmt.Errorf("malformed HealthCheckResponse: wire type %d", key&7)
		}
		if k > len(m) {
			return 0, errors.New("malformed HealthCheckResponse")
		}
		m = m[k:]
		if key == 1<<3|0 {
			status = v
		}
	}
	return status, nil
}

// servingStatusName names a HealthCheckResponse status.
func servingStatusName(s uint64) string {
	switch s {
	case 0:
		return "UNKNOWN"
	case 1:
		return "SERVING"
	case 2:
		return "NOT_SERVING"
	case 3:
		return "SERVICE_UNKNOWN"
	}
	return strconv.FormatUint(s, 10)
}

// grpcCodeName names a gRPC status code.
func grpcCodeName(code int) string {
	names := [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
		"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
		"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}
	if code >= 0 && code < len(names) {
		return names[code]
	}
	return "(unknown code)"
}
