package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Target is a demo target, what a check probes: an HTTP server whose /healthz answers 200
// while it is up and 503 while it is down. Any other path answers 200 with the target's name.
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
		return nil, fmt.Errorf("cluster: target %s: %w", name, err)
	}
	t := &Target{name: name, ln: ln}
	t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 5 * time.Second}
	return t, nil
}

// NewTargets makes a target for every region of addrs (region -> listen address), named by
// its region; on error it closes those it made.
func NewTargets(addrs map[string]string) (map[string]*Target, error) {
	targets := map[string]*Target{}
	for r, addr := range addrs {
		t, err := NewTarget(r, addr)
		if err != nil {
			for _, t := range targets {
				t.Close()
			}
			return nil, err
		}
		targets[r] = t
	}
	return targets, nil
}

// Addr returns the address the target listens on.
func (t *Target) Addr() string { return t.ln.Addr().String() }

// Port returns the port the target listens on.
func (t *Target) Port() int { return t.ln.Addr().(*net.TCPAddr).Port }

// Name returns the target's name (its region in `vigil dev`).
func (t *Target) Name() string { return t.name }

// SetDown makes /healthz fail (true) or pass (false).
func (t *Target) SetDown(down bool) { t.down.Store(down) }

// Down reports whether /healthz fails.
func (t *Target) Down() bool { return t.down.Load() }

// ServeHTTP answers /healthz and the switch: POST /down and POST /up flip it,
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

// Close closes a target that does not run; Run closes it when its context ends.
func (t *Target) Close() { _ = t.ln.Close() }

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
		return fmt.Errorf("cluster: target %s: %w", t.name, err)
	}
}
