package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/status"
)

// Location is one DNS location a verifier asks.
type Location struct {
	// ID is the location's node id, as its digest names it.
	ID string
	// Status is the base URL of its status API, where its digest is read.
	Status string
	// DNS is the address of its main DNS listener.
	DNS string
	// NameServers are the addresses of the virtual name servers it hosts, by index.
	NameServers map[int]string
}

// Options configure a Verifier. Document and Locations are required.
type Options struct {
	// Document returns the configuration (nil: none yet).
	Document func() *config.Document
	// Version, when set, returns the configuration's version: Document is called again only
	// when it changes.
	Version func() uint64
	// Locations returns the locations to ask; at most MaxLocations of them are.
	Locations func() []Location
	// ZoneNameServers returns the indices of the virtual name servers of a zone; nil asks
	// only the locations' main listeners.
	ZoneNameServers func(zone string) []int
	// Interval is the time between two record sets asked: each turn asks one record set of
	// every location and each of its name servers of the zone. Default 1s.
	Interval time.Duration
	// Timeout bounds one DNS query and one digest read. Default 1s.
	Timeout time.Duration
	// Settle is how long every location must answer accordingly before a convergence is
	// measured (later locations' changes join it meanwhile). Default 5s.
	Settle time.Duration
	// MaxAge drops a convergence not reached within it. Default 10m.
	MaxAge time.Duration
	// Client reads the digests. Default a client without proxy.
	Client *http.Client
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger logs; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Bounds of a Verifier.
const (
	// MaxLocations bounds the locations asked and remembered.
	MaxLocations = 128
	// maxServers bounds the virtual name servers asked per location and record set.
	maxServers = 8
	// maxSets bounds the record sets whose convergence is followed.
	maxSets = 4096
	// maxRecent bounds the convergences kept for the status API.
	maxRecent = 32
	// concurrency bounds the locations asked at once.
	concurrency = 8
	// maxDigest bounds a digest read.
	maxDigest = 16 << 20
	// offsetSamples is how many digests estimate a location's clock offset.
	offsetSamples = 8
)

// Verifier asks the locations, one record set per Interval, round-robin, with record sets
// whose convergence is pending asked every other turn.
type Verifier struct {
	opts Options
	m    *metrics
	log  *slog.Logger

	mu       sync.Mutex
	version  uint64
	doc      *config.Document
	next     int // round-robin position
	nextOpen int
	odd      bool
	tr       *tracker
	locs     map[string]*locState
	recent   []Convergence // newest last
	dropped  int
	answers  int64
	disagree int64
}

// locState is what the verifier holds of one location.
type locState struct {
	digest   *status.Digest
	readAt   time.Time
	offsets  []time.Duration // receipt minus generated_at, recent samples
	outcomes map[string]int64
	last     LocationReport
	seen     time.Time
}

// New validates opts and returns a Verifier with its metrics registered.
func New(opts Options) (*Verifier, error) {
	if opts.Document == nil || opts.Locations == nil {
		return nil, errors.New("verify: Document and Locations are required")
	}
	opts.Interval = cmp.Or(opts.Interval, time.Second)
	opts.Timeout = cmp.Or(opts.Timeout, time.Second)
	opts.Settle = cmp.Or(opts.Settle, 5*time.Second)
	opts.MaxAge = cmp.Or(opts.MaxAge, 10*time.Minute)
	if opts.Interval < 10*time.Millisecond || opts.Timeout < time.Millisecond {
		return nil, fmt.Errorf("verify: interval %v (at least 10ms) or timeout %v too short", opts.Interval, opts.Timeout)
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute}}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	forget := max(time.Hour, opts.MaxAge)
	return &Verifier{opts: opts, m: m, log: log, tr: newTracker(opts.Settle, opts.MaxAge, forget, maxSets),
		locs: map[string]*locState{}}, nil
}

// Run asks until ctx ends; it returns nil then.
func (v *Verifier) Run(ctx context.Context) error {
	t := time.NewTicker(v.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			v.Turn(ctx)
		}
	}
}

// setRef is one verifiable record set of the configuration.
type setRef struct {
	zone string
	rs   *config.RecordSet
}

func (s setRef) key() string { return strings.TrimSuffix(s.rs.Name, ".") + " " + string(s.rs.Type) }

// sets returns the verifiable record sets of the current configuration.
func (v *Verifier) sets() []setRef {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.opts.Version == nil || v.doc == nil || v.opts.Version() != v.version {
		if v.opts.Version != nil {
			v.version = v.opts.Version()
		}
		v.doc = v.opts.Document()
	}
	if v.doc == nil {
		return nil
	}
	var out []setRef
	for zi := range v.doc.Zones {
		z := &v.doc.Zones[zi]
		for ri := range z.RecordSets {
			if rs := &z.RecordSets[ri]; Verifiable(rs) {
				out = append(out, setRef{zone: z.Name, rs: rs})
			}
		}
	}
	return out
}

// pick chooses this turn's record set: every other turn one with a pending convergence,
// otherwise the next in round robin.
func (v *Verifier) pick(sets []setRef) setRef {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.odd = !v.odd
	if v.odd {
		for k := range sets {
			i := (v.nextOpen + k) % len(sets)
			if v.tr.isOpen(sets[i].key()) {
				v.nextOpen = i + 1
				return sets[i]
			}
		}
	}
	i := v.next % len(sets)
	v.next = i + 1
	return sets[i]
}

// Turn asks every location about one record set and records what it found.
func (v *Verifier) Turn(ctx context.Context) {
	sets := v.sets()
	if len(sets) == 0 {
		return
	}
	s := v.pick(sets)
	locs := v.opts.Locations()
	if len(locs) > MaxLocations {
		locs = locs[:MaxLocations]
	}
	obs := make([]Observation, len(locs))
	reports := make([]LocationReport, len(locs))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, l := range locs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			obs[i], reports[i] = v.ask(ctx, s, l)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	now := v.opts.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	c, dropped := v.tr.observe(s.key(), obs, now)
	v.tr.sweep(now)
	if c != nil {
		v.m.convergence.Observe(c.Seconds)
		v.recent = append(v.recent, *c)
		if len(v.recent) > maxRecent {
			v.recent = slices.Delete(v.recent, 0, len(v.recent)-maxRecent)
		}
		v.log.Info("verify: locations answer a verdict change accordingly", "record_set", c.RecordSet,
			"seconds", c.Seconds, "locations_changed", c.Changed)
	}
	if dropped {
		v.dropped++
		v.m.dropped.Inc()
	}
	v.m.pending.Set(float64(len(v.tr.pending())))
	for i, l := range locs {
		st := v.locs[l.ID]
		if st == nil {
			continue
		}
		st.last = reports[i]
		st.seen = now
	}
	for id, st := range v.locs {
		if now.Sub(st.seen) > time.Hour {
			delete(v.locs, id)
		}
	}
}

// ask asks one location about record set s: each of its name servers of the zone, then its
// digest for what it should have answered. An answer that disagrees with a digest made
// before the answer was asked for is unconfirmed: the location's verdicts may have changed
// in between (a location serves its digest from a cache for a while).
func (v *Verifier) ask(ctx context.Context, s setRef, l Location) (Observation, LocationReport) {
	ob := Observation{Location: l.ID}
	rep := LocationReport{ID: l.ID, RecordSet: s.key()}
	st := v.location(l.ID)
	if st == nil {
		rep.Outcome, rep.Reason = OutcomeNoVerdicts, "more locations than the verifier follows"
		return ob, rep
	}
	servers := []string{l.DNS}
	if v.opts.ZoneNameServers != nil {
		for _, i := range v.opts.ZoneNameServers(s.zone) {
			if a, ok := l.NameServers[i]; ok && len(servers) <= maxServers {
				servers = append(servers, a)
			}
		}
	}
	asked := v.opts.Now()
	answers := make([][]string, len(servers))
	errs := make([]error, len(servers))
	for i, addr := range servers {
		answers[i], errs[i] = v.query(ctx, addr, s.rs)
	}
	d, offset, err := v.digestOf(ctx, l, st)
	var exp Expectation
	confirmed := false
	if err == nil {
		confirmed = !d.GeneratedAt.Add(offset).Before(asked)
		states := make(map[string]string, len(d.Checks))
		var changed time.Time
		for _, c := range d.Checks {
			states[c.ID] = c.State
		}
		for _, r := range s.rs.Records {
			if i, ok := slices.BinarySearchFunc(d.Checks, r.HealthCheck, func(c status.DigestCheck, id string) int { return cmp.Compare(c.ID, id) }); ok && r.HealthCheck != "" {
				if since := d.Checks[i].Since; since.After(changed) {
					changed = since
				}
			}
		}
		if exp, err = Expect(withOverrides(s.rs, states, d.Overrides), states); err == nil {
			ob.Key = exp.Key()
			if !changed.IsZero() {
				ob.ChangedAt = changed.Add(offset)
			}
		}
	}
	if ctx.Err() != nil {
		return ob, rep
	}
	ob.Agrees = ob.Key != ""
	rep.Outcome = OutcomeAgree
	for i, addr := range servers {
		outcome, reason := OutcomeNoVerdicts, ""
		switch {
		case errs[i] != nil:
			outcome, reason = OutcomeNoAnswer, errs[i].Error()
		case err != nil:
			reason = "its verdicts: " + err.Error()
		default:
			switch reason = exp.Judge(answers[i]); {
			case reason == "":
				outcome = OutcomeAgree
			case confirmed:
				outcome = OutcomeDisagree
				ob.Disagreed = true
			default:
				outcome = OutcomeUnconfirmed
			}
		}
		v.count(l.ID, outcome)
		if outcome != OutcomeAgree {
			ob.Agrees = false
			if rep.Outcome == OutcomeAgree {
				rep.Outcome, rep.Server, rep.Reason = outcome, addr, reason
			}
		}
	}
	rep.At = v.opts.Now()
	return ob, rep
}

// location returns the state of location id, made if there is room.
func (v *Verifier) location(id string) *locState {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := v.locs[id]
	if st == nil && len(v.locs) < MaxLocations {
		st = &locState{outcomes: map[string]int64{}, seen: v.opts.Now()}
		v.locs[id] = st
	}
	return st
}

// count records one outcome.
func (v *Verifier) count(loc, outcome string) {
	v.m.checks.WithLabelValues(loc, outcome).Inc()
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.locs[loc]; st != nil {
		st.outcomes[outcome]++
	}
	switch outcome {
	case OutcomeAgree:
		v.answers++
	case OutcomeDisagree:
		v.answers++
		v.disagree++
	}
}

// digestOf returns location l's digest, read again when older than the interval, and the
// offset that maps its clock onto this one (the least receipt-minus-generation of recent reads:
// a digest served from the location's cache only looks older).
func (v *Verifier) digestOf(ctx context.Context, l Location, st *locState) (*status.Digest, time.Duration, error) {
	v.mu.Lock()
	d, at := st.digest, st.readAt
	v.mu.Unlock()
	now := v.opts.Now()
	if d == nil || now.Sub(at) >= v.opts.Interval {
		nd, err := v.readDigest(ctx, l)
		if err != nil {
			return nil, 0, err
		}
		if nd.Location != l.ID {
			return nil, 0, fmt.Errorf("verify: %s's status API answers as %q", l.ID, nd.Location)
		}
		recv := v.opts.Now()
		v.mu.Lock()
		st.digest, st.readAt = nd, recv
		st.offsets = append(st.offsets, recv.Sub(nd.GeneratedAt))
		if len(st.offsets) > offsetSamples {
			st.offsets = st.offsets[1:]
		}
		v.mu.Unlock()
		d = nd
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return d, slices.Min(st.offsets), nil
}

// readDigest reads GET /v1/network/digest of l.
func (v *Verifier) readDigest(ctx context.Context, l Location) (*status.Digest, error) {
	if l.Status == "" {
		return nil, errors.New("verify: no status API address known")
	}
	ctx, cancel := context.WithTimeout(ctx, v.opts.Timeout)
	defer cancel()
	c := status.Client{Base: l.Status, HTTP: v.opts.Client, MaxBytes: maxDigest}
	d, err := c.Digest(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: digest: %w", err)
	}
	return &d, nil
}

// query asks addr for rs over UDP and returns the values of the answer's records of rs's
// name and type.
func (v *Verifier) query(ctx context.Context, addr string, rs *config.RecordSet) ([]string, error) {
	if addr == "" {
		return nil, errors.New("verify: no DNS address known")
	}
	qtype := dns.TypeA
	if rs.Type == config.TypeAAAA {
		qtype = dns.TypeAAAA
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(rs.Name), qtype)
	m.RecursionDesired = false
	ctx, cancel := context.WithTimeout(ctx, v.opts.Timeout)
	defer cancel()
	c := &dns.Client{Timeout: v.opts.Timeout}
	r, _, err := c.ExchangeContext(ctx, m, addr)
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", addr, err)
	}
	if r.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("verify: %s: rcode %s", addr, dns.RcodeToString[r.Rcode])
	}
	var out []string
	for _, rr := range r.Answer {
		if !strings.EqualFold(rr.Header().Name, dns.Fqdn(rs.Name)) {
			continue
		}
		switch a := rr.(type) {
		case *dns.A:
			out = append(out, a.A.String())
		case *dns.AAAA:
			out = append(out, a.AAAA.String())
		}
	}
	return out, nil
}
