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
	// Logger receives the provider's logs; nil discards them.
	Logger *slog.Logger
}

// Provider is the webhook provider: an http.Handler that ExternalDNS talks to.
type Provider struct {
	cfg   Config
	zones []string // canonical apexes, longest first
	ctl   *client.Client
	log   *slog.Logger
	mux   *http.ServeMux
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
	ctl, err := client.New(client.Config{Voters: cfg.Voters, Token: cfg.Token, HTTP: cfg.Client})
	if err != nil {
		return nil, fmt.Errorf("externaldns: %w", err)
	}
	p := &Provider{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), ctl: ctl}
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

// ServeHTTP serves the webhook protocol.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		if err != nil {
			p.log.Warn("externaldns: endpoint left out", "err", err)
			continue
		}
		out = append(out, a)
	}
	p.reply(w, out)
}

// applyChanges answers POST /records: creates and updates put each record set after its
// checks, deletes remove it before them; 204 when all went through, 500 (which ExternalDNS
// retries) otherwise.
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

func (p *Provider) apply(ctx context.Context, ch *Changes) error {
	var errs []error
	for _, e := range append(slices.Clone(ch.Create), ch.UpdateNew...) {
		if err := p.put(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	// Checks the updates no longer name.
	keep := map[string]bool{}
	for _, e := range ch.UpdateNew {
		for _, id := range checkIDs(e) {
			keep[id] = true
		}
	}
	for _, e := range ch.UpdateOld {
		for _, id := range checkIDs(e) {
			if !keep[id] {
				if err := deleteCheck(ctx, p.ctl, id); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, e := range ch.Delete {
		zone := p.zoneOf(e.DNSName)
		if zone == "" {
			continue
		}
		owner := strings.TrimSuffix(strings.ToLower(e.DNSName), ".") + "."
		if err := deleteRecordSet(ctx, p.ctl, zone, owner, e.RecordType); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, id := range checkIDs(e) {
			if err := deleteCheck(ctx, p.ctl, id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// put writes one endpoint: its checks, then its record set.
func (p *Provider) put(ctx context.Context, e *Endpoint) error {
	zone := p.zoneOf(e.DNSName)
	if zone == "" {
		return fmt.Errorf("externaldns: %s is in no managed zone", e.DNSName)
	}
	rs, checks, err := recordSet(e)
	if err != nil {
		return fmt.Errorf("externaldns: %s %s: %w", e.DNSName, e.RecordType, err)
	}
	for i := range checks {
		if err := putCheck(ctx, p.ctl, &checks[i]); err != nil {
			return err
		}
	}
	p.log.Info("externaldns: record set written", "name", rs.Name, "type", rs.Type, "records", len(rs.Records), "checks", len(checks))
	_, err = p.ctl.PutRecordSet(ctx, zone, &rs)
	return err
}
