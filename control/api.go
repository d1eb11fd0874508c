package control

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
)

// APIConfig configures the HTTP API of one voter.
type APIConfig struct {
	// Node is the voter the API serves.
	Node *Server
	// WriteTokens are the bearer tokens that may write (and read). No token, no write.
	WriteTokens []string
	// ReadTokens are bearer tokens that may only read.
	ReadTokens []string
	// OpenReads lets anyone read without a token.
	OpenReads bool
	// ClientCerts, when set, lets a client certificate stand in for a token
	// (api_certauth.go): any certificate of the CA reads, the control and operator roles
	// write.
	ClientCerts ClientCertFunc
	// Tokens are named tokens with scopes, stored hashed (auth.go). WriteTokens and
	// ReadTokens are named write-token-N and read-token-N. API.SetTokens replaces all three.
	Tokens []Token
	// MaxBodyBytes bounds the bytes a request sends, and what a body other than a document
	// decompresses to; default 32 MiB (a document of 10,000 checks is about 4 MiB of JSON,
	// 110,000 checks with their record sets about 32 MiB of YAML).
	MaxBodyBytes int64
	// MaxDocumentBytes bounds what a gzip-compressed document (PUT /v1/document with
	// Content-Encoding: gzip) decompresses to; default 512 MiB (1,000,000 checks with their
	// record sets as `vigil load document` writes them: 249 MB of YAML, 12 MB compressed).
	// Such documents are read and decoded one at a time (see MaxDecodes); decoding holds
	// about 35 times the document's bytes at its peak.
	MaxDocumentBytes int64
	// MaxWait bounds the wait of a blocking read; default 5 minutes. DefaultWait is the wait
	// when a blocking read names none; default 30s.
	MaxWait, DefaultWait time.Duration
	// MaxWatchers bounds the blocking reads waiting at once; default 4096.
	MaxWatchers int
	// MaxDecodes bounds the write bodies read and decoded at once; default 4. Decoding is a
	// write's memory peak (a body up to MaxBodyBytes, and YAML aliases expanding to up to
	// 100,000 values or one per byte: about 20 MB for an 11 KB document of aliases, by
	// config's BenchmarkDecodeAliasBudget), so it bounds what writers can cost a voter
	// together. A gzip-compressed document takes, besides, the one turn of such documents,
	// which it holds until it is committed. A write waits DecodeWait for a turn,
	// default 5s, then gets 503 with Retry-After. Commits are not limited: the decoded writes
	// of many clients still share raft entries.
	MaxDecodes int
	DecodeWait time.Duration
	// StaleAfter is how long a follower may go without hearing the leader before its reads
	// are marked stale; default 5s.
	StaleAfter time.Duration
	// LeaderWait is how long a voter that knows no leader waits for one before it refuses a
	// write; default 2s (about one election).
	LeaderWait time.Duration
	// Client forwards writes and linearizable reads to the leader; default a plain client.
	Client *http.Client
	// Registerer receives the API's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger receives the API's logs; nil discards them.
	Logger *slog.Logger
}

// API is the control plane's HTTP API: an http.Handler.
type API struct {
	cfg      APIConfig
	log      *slog.Logger
	metrics  *apiMetrics
	watchers chan struct{}
	decodes  chan struct{} // one token per write body being read and decoded
	large    chan struct{} // the one compressed document being read, decoded and committed
	mux      *http.ServeMux
	refusals *refusalLog
	tokens   atomic.Pointer[TokenSet] // what authenticate accepts: cfg's, until SetTokens
}

// Route is one method and path pattern of the API, as the OpenAPI document lists it.
type Route struct {
	Method, Path string
}

type route struct {
	Route
	write   bool
	handler http.HandlerFunc
}

// NewAPI returns the API of cfg.Node.
func NewAPI(cfg APIConfig) (*API, error) {
	if cfg.Node == nil {
		return nil, errors.New("control: the API needs a voter")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.MaxDocumentBytes <= 0 {
		cfg.MaxDocumentBytes = 512 << 20
	}
	cfg.MaxDocumentBytes = max(cfg.MaxDocumentBytes, cfg.MaxBodyBytes)
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 5 * time.Minute
	}
	if cfg.DefaultWait <= 0 {
		cfg.DefaultWait = 30 * time.Second
	}
	if cfg.MaxWatchers <= 0 {
		cfg.MaxWatchers = 4096
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = 5 * time.Second
	}
	if cfg.MaxDecodes <= 0 {
		cfg.MaxDecodes = 4
	}
	if cfg.DecodeWait <= 0 {
		cfg.DecodeWait = 5 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.LeaderWait <= 0 {
		cfg.LeaderWait = 2 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newAPIMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	a := &API{cfg: cfg, log: log, metrics: m, watchers: make(chan struct{}, cfg.MaxWatchers),
		decodes: make(chan struct{}, cfg.MaxDecodes), large: make(chan struct{}, 1), mux: http.NewServeMux(), refusals: newRefusalLog()}
	a.SetTokens(TokenSet{Write: cfg.WriteTokens, Read: cfg.ReadTokens, Named: cfg.Tokens})
	for _, rt := range a.routes() {
		a.mux.Handle(rt.Method+" "+rt.Path, a.instrument(rt))
	}
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("control: no such API path %s", r.URL.Path))
	})
	return a, nil
}

// Routes returns every route of the API.
func (a *API) Routes() []Route {
	var out []Route
	for _, rt := range a.routes() {
		out = append(out, rt.Route)
	}
	return out
}

func (a *API) routes() []route {
	r := func(method, path string, write bool, h http.HandlerFunc) route {
		return route{Route{method, path}, write, h}
	}
	return append([]route{
		r("GET", "/v1/state", false, a.getState),
		r("GET", "/v1/changes", false, a.getChanges),
		r("GET", "/v1/document", false, a.getDocument),
		r("PUT", "/v1/document", true, a.putDocument),
		r("GET", "/v1/checks", false, a.listChecks),
		r("POST", "/v1/checks", true, a.putCheck),
		r("GET", "/v1/checks/{id}", false, a.getCheck),
		r("PUT", "/v1/checks/{id}", true, a.putCheck),
		r("DELETE", "/v1/checks/{id}", true, a.deleteCheck),
		r("GET", "/v1/zones", false, a.listZones),
		r("POST", "/v1/zones", true, a.putZone),
		r("GET", "/v1/zones/{zone}", false, a.getZone),
		r("PUT", "/v1/zones/{zone}", true, a.putZone),
		r("DELETE", "/v1/zones/{zone}", true, a.deleteZone),
		r("GET", "/v1/zones/{zone}/record_sets", false, a.listRecordSets),
		r("POST", "/v1/zones/{zone}/record_sets", true, a.putRecordSet),
		r("GET", "/v1/zones/{zone}/record_sets/{name}/{type}", false, a.getRecordSet),
		r("PUT", "/v1/zones/{zone}/record_sets/{name}/{type}", true, a.putRecordSet),
		r("DELETE", "/v1/zones/{zone}/record_sets/{name}/{type}", true, a.deleteRecordSet),
		r("GET", "/v1/zones/{zone}/dnssec", false, a.getDNSSEC),
		r("POST", "/v1/zones/{zone}/dnssec/rollover", true, a.postRollover),
		r("GET", "/v1/tsig-keys", false, a.listTSIGKeys),
		r("PUT", "/v1/tsig-keys/{name}", true, a.putTSIGKey),
		r("DELETE", "/v1/tsig-keys/{name}", true, a.deleteTSIGKey),
		r("GET", "/v1/cluster", false, a.getCluster),
		r("POST", "/v1/cluster/voters", true, a.joinVoter),
		r("DELETE", "/v1/cluster/voters/{id}", true, a.removeVoter),
	}, a.opsRoutes()...)
}

// ServeHTTP serves the API. A path with a "." or ".." segment is refused with a JSON 400:
// the mux would redirect it, unauthenticated, to the path it cleans to, which names another
// resource (".../record_sets/x/../.." is the zone), and a client that follows redirects would
// then write there with its token. Other paths that are not clean (a double slash, as a base
// URL with a trailing slash makes) are still redirected to the same resource's path.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if hasDotSegment(r.URL.Path) {
		writeError(w, http.StatusBadRequest, fmt.Errorf("control: path %q has a \".\" or \"..\" segment: nothing was done", r.URL.Path))
		return
	}
	a.mux.ServeHTTP(w, r)
}

// hasDotSegment reports whether the slash-separated path p has a "." or ".." segment.
func hasDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// statusRecorder remembers the status code written, and the start of an error's body (for
// the refusal log).
type statusRecorder struct {
	http.ResponseWriter
	code int
	head []byte
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	if s.code >= 400 && len(s.head) < 1024 {
		s.head = append(s.head, b[:min(len(b), 1024-len(s.head))]...)
	}
	return s.ResponseWriter.Write(b)
}

// instrument wraps a route with its metrics, authentication and body limit.
func (a *API) instrument(rt route) http.Handler {
	label := rt.Method + " " + rt.Path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			code := rec.code
			if code == 0 {
				code = http.StatusOK
			}
			a.metrics.requests.WithLabelValues(label, strconv.Itoa(code)).Inc()
			a.metrics.duration.WithLabelValues(label).Observe(time.Since(start).Seconds())
		}()
		r, err := a.authenticate(r, rt)
		if err != nil {
			a.refuse(rec, err)
			a.noteRefusal(r, rt, rec.code, rec.head)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(rec, r.Body, a.cfg.MaxBodyBytes)
		}
		rt.handler(rec, r)
		a.noteRefusal(r, rt, rec.code, rec.head)
	})
}

func tokenEqual(want, got string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

func writeError(w http.ResponseWriter, code int, err error) {
	body := state.ErrorBody{Error: err.Error()}
	var ve *state.ValidationError
	var es config.Errors
	switch {
	case errors.As(err, &ve):
		body.Error = "control: the resulting configuration is invalid, nothing was applied"
		body.Errors = ve.Errors
	case errors.As(err, &es):
		body.Error = "control: the request body is invalid, nothing was applied"
		body.Errors = es
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// statusOf maps an error of a write or read to its HTTP status code.
func statusOf(err error) int {
	var ve *state.ValidationError
	var es config.Errors
	var mbe *http.MaxBytesError
	var early *dnssec.TooEarlyError
	switch {
	case errors.As(err, &mbe), errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBadEncoding):
		return http.StatusBadRequest
	case errors.As(err, &ve):
		return http.StatusUnprocessableEntity
	case errors.As(err, &es):
		return http.StatusBadRequest
	case errors.Is(err, state.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, state.ErrConflict), errors.As(err, &early):
		return http.StatusConflict
	case errors.Is(err, ErrNoLeader), errors.Is(err, ErrUnknownOutcome), errors.Is(err, ErrNotReady), errors.Is(err, ErrNotLeader):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
