package status

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure an API.
type Options struct {
	// Node is the node served; required.
	Node NodeView
	// Location is the node's DNS location; nil when it runs none (its routes answer 404).
	Location LocationView
	// Checker is the node's checker; nil when it runs none (its routes answer 404).
	Checker CheckerView
	// Gatherer is what /metrics serves; nil answers 404 there.
	Gatherer prometheus.Gatherer
	// Registerer receives the API's own metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger logs server errors (5xx responses); nil discards.
	Logger *slog.Logger
	// Now is the clock of generated_at stamps; nil is time.Now.
	Now func() time.Time
	// Refresh is how often the status page reloads its data; default 2s.
	Refresh time.Duration
	// History is the location's history; nil when it keeps none (its routes answer 404).
	History HistoryView
	// Network configures how the network view reaches the other locations.
	Network NetworkOptions
}

// Route is one method and path pattern the API serves.
type Route struct {
	Method, Path string
}

// API is the status API of one node: an http.Handler.
type API struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics
	mux     *http.ServeMux
	routes  []Route
	net     *network
	// digestBody is the last digest served, made at digestAt.
	digestMu   sync.Mutex
	digestBody []byte
	digestAt   time.Time
	// avail is every check's 24-hour availability, computed at availAt (network.go).
	availMu sync.Mutex
	avail   map[string]availability
	availAt time.Time
}

// New returns the status API of opts.Node.
func New(opts Options) (*API, error) {
	if opts.Node == nil {
		return nil, errors.New("status: no node view")
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	a := &API{opts: opts, log: opts.Logger, now: opts.Now, metrics: m, mux: http.NewServeMux()}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.opts.Refresh <= 0 {
		a.opts.Refresh = 2 * time.Second
	}
	a.opts.Network.setDefaults()
	a.net = &network{opts: a.opts.Network, known: map[string]knownLocation{}}
	page, err := newPage(a.opts.Refresh)
	if err != nil {
		return nil, err
	}
	a.handle("GET /v1/verdicts", a.location(a.verdicts))
	a.handle("GET /v1/verdicts/{id}", a.location(a.verdict))
	a.handle("GET /v1/checkers", a.location(a.checkers))
	a.handle("GET /v1/answer", a.location(a.answer))
	a.handle("GET /v1/served-zones", a.location(a.zones))
	a.handle("GET /v1/answers", a.location(a.answers))
	a.handle("GET /v1/network", a.location(a.networkView))
	a.handle("GET /v1/network/digest", a.location(a.networkDigest))
	a.handle("GET /v1/history", a.withHistory(a.historyList))
	a.handle("GET /v1/history/{id}", a.withHistory(a.checkHistory))
	a.handle("GET /v1/answer-history", a.withHistory(a.answerHistory))
	a.handle("GET /v1/probes", a.checker(a.probes))
	a.handle("GET /v1/self", a.checker(a.self))
	a.handle("GET /v1/node", a.node)
	a.handle("GET /v1/members", a.members)
	a.handle("GET /healthz", a.healthz)
	a.handle("GET /readyz", a.readyz)
	a.handle("GET /metrics", a.metricsHandler())
	a.handle("GET /{$}", page.index)
	a.handle("GET /static/{file}", page.static)
	// Anything else is a JSON error, not the mux's plain-text one: every resource is
	// read-only, so another method is 405, and an unknown path 404.
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "status: the status API is read-only: "+r.Method+" is not allowed")
			return
		}
		writeError(w, http.StatusNotFound, "status: no such resource: "+r.URL.Path)
	})
	return a, nil
}

// handle routes pattern ("METHOD /path") to h, counting requests by pattern.
func (a *API) handle(pattern string, h http.HandlerFunc) {
	var rt Route
	for i := range pattern {
		if pattern[i] == ' ' {
			rt = Route{Method: pattern[:i], Path: pattern[i+1:]}
			break
		}
	}
	a.routes = append(a.routes, rt)
	a.mux.Handle(pattern, a.metrics.instrument(rt.Path, a.log, h))
}

// Routes returns every route the API serves, for the OpenAPI test.
func (a *API) Routes() []Route { return append([]Route(nil), a.routes...) }

// ServeHTTP serves the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	a.mux.ServeHTTP(w, r)
}

// location guards a handler that needs the node's location.
func (a *API) location(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.opts.Location == nil {
			writeError(w, http.StatusNotFound, "status: this node is not a DNS location")
			return
		}
		h(w, r)
	}
}

// checker guards a handler that needs the node's checker.
func (a *API) checker(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.opts.Checker == nil {
			writeError(w, http.StatusNotFound, "status: this node is not a checker")
			return
		}
		h(w, r)
	}
}

// metricsHandler serves opts.Gatherer.
func (a *API) metricsHandler() http.HandlerFunc {
	if a.opts.Gatherer == nil {
		return func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotFound, "status: this node exports no metrics")
		}
	}
	h := promhttp.HandlerFor(a.opts.Gatherer, promhttp.HandlerOpts{})
	return h.ServeHTTP
}

// writeJSON writes v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "status: encoding the response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes {"error": msg} with status code.
func writeError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(ErrorBody{Error: msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
