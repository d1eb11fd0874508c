package dev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Target is a demo endpoint: an HTTP server whose /healthz answers 200 while it is up and
// 503 while it is down. Any other path answers 200 with the target's name.
type Target struct {
	name string
	ln   net.Listener
	down atomic.Bool
	srv  *http.Server
}

// NewTarget listens on addr (host:port; port 0 picks one) for the target called name.
func NewTarget(name, addr string) (*Target, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dev: target %s: %w", name, err)
	}
	t := &Target{name: name, ln: ln}
	t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 5 * time.Second}
	return t, nil
}

// Addr returns the address the target listens on.
func (t *Target) Addr() string { return t.ln.Addr().String() }

// Name returns the target's name (its region in `vigil dev`).
func (t *Target) Name() string { return t.name }

// SetDown makes the health endpoint fail (true) or pass (false).
func (t *Target) SetDown(down bool) { t.down.Store(down) }

// Down reports whether the health endpoint fails.
func (t *Target) Down() bool { return t.down.Load() }

// ServeHTTP answers the health endpoint and the switch: POST /down and POST /up flip it,
// for the compose demo where the target runs in a container of its own.
func (t *Target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/down" && r.Method == http.MethodPost:
		t.SetDown(true)
	case r.URL.Path == "/up" && r.Method == http.MethodPost:
		t.SetDown(false)
	case r.URL.Path == "/healthz" && t.Down():
		http.Error(w, t.name+": down (switched off)", http.StatusServiceUnavailable)
		return
	}
	state := "up"
	if t.Down() {
		state = "down"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "%s: %s\n", t.name, state)
}

// Run serves until ctx ends.
func (t *Target) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- t.srv.Serve(t.ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = t.srv.Shutdown(sctx)
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("dev: target %s: %w", t.name, err)
	}
}
