package externaldns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
)

// Config configures a Provider.
type Config struct {
	// Voters are base URLs of control voters' APIs, e.g. "http://127.0.0.1:7100"; writes go
	// to any of them (it forwards to the leader). At least one.
	Voters []string
	// Token is the bearer token the provider writes with.
	Token string
	// Zones are the zones the provider manages (they must exist in Vigil): ExternalDNS is
	// told to keep to them, and endpoints outside them are refused. At least one.
	Zones []string
	// Client makes the control API requests; default one with a 30s timeout.
	Client *http.Client
	// MaxBody bounds a request body ExternalDNS sends; default 16 MiB.
	MaxBody int64
	// Owner is the mark (a record set's managed_by) of the record sets this provider
	// creates, and the only record sets it changes or deletes; default DefaultOwner. Two
	// providers sharing a zone (two clusters) take different owners.
	Owner string
	// AllowedHosts are host names or addresses, besides loopback addresses and localhost,
	// that a request's Host header may name: the name in ExternalDNS's
	// --webhook-provider-url when the provider listens beyond loopback. Ports are ignored.
	AllowedHosts []string
	// Registerer receives the provider's metrics; nil keeps them unregistered.
	Registerer prometheus.Registerer
	// Logger receives the provider's logs; nil discards them.
	Logger *slog.Logger
}

// DefaultOwner is the managed_by mark of the record sets a provider creates by default.
const DefaultOwner = "external-dns"

// Provider is the webhook provider: an http.Handler that ExternalDNS talks to.
type Provider struct {
	cfg   Config
	zones []string // canonical apexes, longest first
	hosts map[string]struct{}
	ctl   *client.Client
	log   *slog.Logger
	mux   *http.ServeMux
	m     *metrics
}

// New returns a provider for cfg.
func New(cfg Config) (*Provider, error) {
	if len(cfg.Voters) == 0 {
		return nil, errors.New("externaldns: no control voter")
	}
	if len(cfg.Zones) == 0 {
		return nil, errors.New("externaldns: no zone to manage")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 16 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner
	}
	if !config.ValidManagedBy(cfg.Owner) {
		return nil, fmt.Errorf("externaldns: owner %q: want 1 to 63 letters, digits and - . _ /", cfg.Owner)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	ctl, err := client.New(client.Config{Voters: cfg.Voters, Token: cfg.Token, HTTP: cfg.Client})
	if err != nil {
		return nil, fmt.Errorf("externaldns: %w", err)
	}
	p := &Provider{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), ctl: ctl, m: m, hosts: map[string]struct{}{}}
	for _, h := range cfg.AllowedHosts {
		if h = canonicalHost(h); h != "" {
			p.hosts[h] = struct{}{}
		}
	}
	for _, z := range cfg.Zones {
		p.zones = append(p.zones, strings.TrimSuffix(strings.ToLower(strings.TrimSpace(z)), ".")+".")
	}
	slices.SortFunc(p.zones, func(a, b string) int { return len(b) - len(a) })
	p.mux.HandleFunc("GET /{$}", p.negotiate)
	p.mux.HandleFunc("GET /records", p.records)
	p.mux.HandleFunc("POST /records", p.applyChanges)
	p.mux.HandleFunc("POST /adjustendpoints", p.adjustEndpoints)
	p.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return p, nil
}

// ServeHTTP serves the webhook protocol to the requests the guard lets through (guard.go).
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if no := p.guard(r); no != nil {
		p.m.requestsRefused.WithLabelValues(no.reason).Inc()
		p.log.Warn("externaldns: request refused", "reason", no.reason, "method", r.Method, "path", shortText(r.URL.Path),
			"host", shortText(r.Host), "remote", r.RemoteAddr, "content_type", shortText(r.Header.Get("Content-Type")))
		http.Error(w, no.msg, no.code)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, p.cfg.MaxBody)
	p.mux.ServeHTTP(w, r)
}

func (p *Provider) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", MediaType)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		p.log.Warn("externaldns: write an answer", "err", err)
	}
}

func (p *Provider) fail(w http.ResponseWriter, code int, err error) {
	p.log.Error("externaldns: request failed", "err", err)
	http.Error(w, err.Error(), code)
}

// negotiate answers GET /: the domain filter.
func (p *Provider) negotiate(w http.ResponseWriter, _ *http.Request) {
	var f DomainFilter
	for _, z := range p.zones {
		f.Include = append(f.Include, strings.TrimSuffix(z, "."))
	}
	p.reply(w, f)
}

// zoneOf returns the managed zone name falls in, or "".
func (p *Provider) zoneOf(name string) string {
	n := strings.TrimSuffix(strings.ToLower(name), ".") + "."
	for _, z := range p.zones {
		if n == z || strings.HasSuffix(n, "."+z) {
			return z
		}
	}
	return ""
}

// records answers GET /records: every record set of the managed zones as an endpoint, with
// the properties of the checks the provider made.
func (p *Provider) records(w http.ResponseWriter, r *http.Request) {
	out, err := p.list(r.Context())
	if err != nil {
		p.fail(w, http.StatusInternalServerError, err)
		return
	}
	p.reply(w, out)
}

func (p *Provider) list(ctx context.Context) ([]*Endpoint, error) {
	out := []*Endpoint{}
	for _, z := range p.zones {
		sets, _, err := p.ctl.Consistent().RecordSets(ctx, z)
		if err != nil {
			return nil, err
		}
		for i := range sets {
			rs := &sets[i]
			var check *config.Check
			if len(rs.Records) > 0 && isOwnCheck(rs.Records[0].HealthCheck) {
				c, err := p.ctl.Check(ctx, rs.Records[0].HealthCheck)
				if err != nil && !errors.Is(err, client.ErrNotFound) {
					return nil, err
				}
				if err == nil {
					check = &c
				}
			}
			if e, ok := endpointOf(rs, check); ok {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// adjustEndpoints answers POST /adjustendpoints: the endpoints as they will be stored;
// those that cannot be are left out (and logged), so that ExternalDNS does not try them
// again at every synchronisation.
func (p *Provider) adjustEndpoints(w http.ResponseWriter, r *http.Request) {
	var in []*Endpoint
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		p.fail(w, http.StatusBadRequest, fmt.Errorf("externaldns: adjust endpoints: %w", err))
		return
	}
	out := make([]*Endpoint, 0, len(in))
	for _, e := range in {
		if e == nil {
			continue
		}
		a, err := adjust(e)
		if err == nil && p.zoneOf(a.DNSName) == "" {
			err = fmt.Errorf("%s: in no zone this provider manages (%s)", a.DNSName, strings.Join(p.zones, ", "))
		}
		if err == nil && p.refOf(a).apexNS() {
			err = fmt.Errorf("%s NS: the zone's own name servers are Vigil's, never ExternalDNS's", a.DNSName)
		}
		if err != nil {
			p.log.Warn("externaldns: endpoint left out", "err", err)
			continue
		}
		out = append(out, a)
	}
	p.reply(w, out)
}

// applyChanges answers POST /records: creates and updates put each record set after its
// checks, deletes remove it before them, of the record sets this provider owns (ownership.go);
// 204 when all went through or were refused for ownership, 500 (which ExternalDNS retries)
// when a write failed.
func (p *Provider) applyChanges(w http.ResponseWriter, r *http.Request) {
	var ch Changes
	if err := json.NewDecoder(r.Body).Decode(&ch); err != nil {
		p.fail(w, http.StatusBadRequest, fmt.Errorf("externaldns: apply changes: %w", err))
		return
	}
	if err := p.apply(r.Context(), &ch); err != nil {
		p.fail(w, http.StatusInternalServerError, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
