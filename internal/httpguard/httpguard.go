// Package httpguard holds what every HTTP listener of Vigil shares in front of its handlers:
// path normalisation, time limits on requests, and bounds on connections. One path
// normalisation refuses a path with a "." or ".." segment, or an empty one, with a JSON 400
// before any router can redirect it to another resource; the time limits on reading a
// request's header and body keep a client dripping bytes from holding a connection open; and
// Listen bounds the connections held open at once, in all and per source network.
package httpguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Defaults of Limits.
const (
	// DefaultHeaderTimeout bounds the reading of a request's header.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout bounds the reading of a request's body, from the end of its header.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds how long a kept-alive connection waits for its next request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes bounds a request's header.
	DefaultMaxHeaderBytes = 64 << 10
)

// Limits are an HTTP listener's time and size limits. The zero value of a field means its
// default.
type Limits struct {
	// HeaderTimeout bounds the reading of a request's header. Default DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the reading of a request's body, from the end of its header; a
	// client that has not sent the whole body by then is cut off. Responses are not bounded
	// (blocking reads wait as long as they ask). Default DefaultBodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout bounds how long a kept-alive connection waits for its next request.
	// Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header. Default DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxConns bounds the connections the listener holds open at once (Listen). Default
	// DefaultMaxConns.
	MaxConns int
	// MaxConnsPerSource bounds the connections one network, a /24 for IPv4 and a /56 for
	// IPv6, holds open at once (Listen), so that the many addresses of one host or subnet
	// share one allowance. Default DefaultMaxConnsPerSource; below MaxConns, so that one
	// network always leaves connections to the others.
	MaxConnsPerSource int
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.HeaderTimeout == 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.BodyTimeout == 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerSource == 0 {
		l.MaxConnsPerSource = DefaultMaxConnsPerSource
	}
	return l
}

// Validate reports the limits that are out of range, with defaults applied first.
func (l Limits) Validate() error {
	l = l.WithDefaults()
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"header timeout", l.HeaderTimeout}, {"body timeout", l.BodyTimeout}, {"idle timeout", l.IdleTimeout}} {
		if d.v < 10*time.Millisecond {
			errs = append(errs, fmt.Errorf("httpguard: %s %v is below 10ms", d.name, d.v))
		}
	}
	if l.MaxHeaderBytes < 4096 {
		errs = append(errs, fmt.Errorf("httpguard: max header bytes %d is below 4096", l.MaxHeaderBytes))
	}
	if l.MaxConns < 2 || l.MaxConnsPerSource < 1 || l.MaxConnsPerSource >= l.MaxConns {
		errs = append(errs, fmt.Errorf("httpguard: connections %d in all and %d per network (/24 IPv4, /56 IPv6): want at least 2 in all and 1 per network, and fewer per network than in all so that one network cannot take them all (-http-max-conns, -http-max-conns-per-source)", l.MaxConns, l.MaxConnsPerSource))
	}
	return errors.Join(errs...)
}

// Server returns an http.Server that serves h behind Handler, with the limits.
func Server(h http.Handler, l Limits) *http.Server {
	l = l.WithDefaults()
	return &http.Server{
		Handler:           Handler(h, l),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// Handler refuses a request whose path is not in normal form with a JSON 400 and bounds the
// reading of its body by l.BodyTimeout; otherwise it serves h.
func Handler(h http.Handler, l Limits) http.Handler {
	l = l.WithDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); !Normal(p) || !Normal(r.URL.Path) {
			refuse(w, fmt.Errorf("path %q has an empty, \".\" or \"..\" segment: nothing was done", p))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			// Not every ResponseWriter can set deadlines (tests' recorders): then the
			// server's own limits are all there is.
			if err := rc.SetReadDeadline(time.Now().Add(l.BodyTimeout)); err == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// Normal reports whether the slash-separated path p is in normal form: it starts with "/"
// and has no "." or ".." segment (also percent-encoded) and no empty segment other than a
// trailing one. "*" (OPTIONS *) is normal too.
func Normal(p string) bool {
	if p == "*" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		switch strings.ToLower(seg) {
		case ".", "..", "%2e", "%2e%2e", ".%2e", "%2e.":
			return false
		case "":
			if i != len(segs)-1 {
				return false
			}
		}
		if strings.ContainsRune(seg, '\\') || strings.Contains(strings.ToLower(seg), "%2f") || strings.Contains(strings.ToLower(seg), "%5c") {
			return false
		}
	}
	return true
}

// refuse writes a JSON 400 in the form of Vigil's APIs: {"error": "..."}.
func refuse(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{err.Error()})
}

// deadlineBody lifts the body's read deadline once the body has been read to its end or
// closed, so that a handler that then waits (a blocking read) is not cut off by it.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

// Read reads the body; at its end the deadline is lifted.
func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.lift()
	}
	return n, err
}

// Close closes the body. The deadline stays until the server has discarded what is left
// of the body, which it does after the handler returns.
func (b *deadlineBody) Close() error { return b.ReadCloser.Close() }

func (b *deadlineBody) lift() {
	if !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}
