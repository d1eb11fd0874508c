package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vigil-dns/vigil/internal/httpguard"
)

// httpServer is the node's HTTP listener: metrics, liveness, readiness and mounted handlers.
type httpServer struct {
	mu      sync.Mutex
	mux     *http.ServeMux
	started bool
	limits  httpguard.Limits
}

func newHTTPServer(n *Node) *httpServer {
	h := &httpServer{mux: http.NewServeMux(), limits: n.cfg.HTTPLimits}
	if n.gat != nil {
		h.mux.Handle("GET /metrics", promhttp.HandlerFor(n.gat, promhttp.HandlerOpts{}))
	}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	h.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := n.Ready()
		w.Header().Set("Content-Type", "application/json")
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rd)
	})
	return h
}

// Handle mounts a handler on the node's HTTP listener, e.g. the status API. It must be
// called before Run; patterns are http.ServeMux's.
func (n *Node) Handle(pattern string, h http.Handler) error {
	n.http.mu.Lock()
	defer n.http.mu.Unlock()
	if n.http.started {
		return errors.New("node: handlers are mounted before Run")
	}
	n.http.mux.Handle(pattern, h)
	return nil
}

// HTTPAddr returns the address of the node's HTTP listener, or "" when it has none.
func (n *Node) HTTPAddr() string {
	if n.httpLn == nil {
		return ""
	}
	return n.httpLn.Addr().String()
}

// httpAdvertise returns the address at which other nodes reach this node's HTTP listener, as
// its gossip metadata says it: Config.HTTPAdvertise when set; else the listener's address, with
// no host when it listens on every address (":7701": the host of its gossip address); "" when
// it serves no HTTP.
func (n *Node) httpAdvertise() string {
	if n.cfg.HTTPAdvertise != "" {
		return n.cfg.HTTPAdvertise
	}
	if n.httpLn == nil {
		return ""
	}
	a, ok := n.httpLn.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	if a.IP.IsUnspecified() {
		return ":" + strconv.Itoa(a.Port)
	}
	return a.String()
}

// freeze ends the mounting of handlers: Run calls it before it serves.
func (h *httpServer) freeze() {
	h.mu.Lock()
	h.started = true
	h.mu.Unlock()
}

// serve returns the function that serves ln until its context ends.
func (h *httpServer) serve(ln net.Listener) func(context.Context) error {
	return func(ctx context.Context) error {
		srv := httpguard.Server(h.mux, h.limits)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
		return nil
	}
}

// Registerer returns the registry that holds the node's metrics: a handler mounted on the
// node (the status API) registers its own metrics there.
func (n *Node) Registerer() prometheus.Registerer { return n.reg }

// Gatherer returns what the node's /metrics serves; nil when the Registerer gathers nothing.
func (n *Node) Gatherer() prometheus.Gatherer { return n.gat }

// Logger returns the node's logger, with its id attached.
func (n *Node) Logger() *slog.Logger { return n.log }

// listenHTTP binds the node's HTTP listener, bounded in connections in all and per source
// (httpguard.Listen).
func listenHTTP(addr string, l httpguard.Limits, reg prometheus.Registerer) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("node: http listener: %w", err)
	}
	guarded, err := httpguard.Listen(ln, l, reg, "http")
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("node: http listener: %w", err)
	}
	return guarded, nil
}
