package location

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location/routing"
)

// Defaults of Config.
const (
	// DefaultNameServerWorkers is the number of UDP workers of each virtual name server.
	DefaultNameServerWorkers = 2
	// DefaultNameServerBudget is the queries a second each virtual name server answers.
	DefaultNameServerBudget = 20000
	// DefaultMaxTCPConns is the number of TCP connections each listener serves at once.
	DefaultMaxTCPConns = 64
	// DefaultTCPIdleTimeout is how long a TCP connection may wait for its next query.
	DefaultTCPIdleTimeout = 10 * time.Second
	// DefaultMaxTCPConnsPerClient is the number of TCP connections one client network (a /24
	// for IPv4, a /56 for IPv6) may hold at once on each listener: an eighth of
	// DefaultMaxTCPConns.
	DefaultMaxTCPConnsPerClient = 8
	// DefaultTCPConnLifetime is how long a TCP connection is served at most, however busy.
	DefaultTCPConnLifetime = 30 * time.Second
	// DefaultTCPQueriesPerConn is the number of queries a TCP connection is answered at most.
	DefaultTCPQueriesPerConn = 1000
)

// Config configures a location's DNS server.
type Config struct {
	// Addr is the main listener's address, for UDP and TCP on the same port, e.g.
	// "127.0.0.1:5353". Port 0 picks a free port (the same for both). The main listener
	// answers every hosted zone.
	Addr string
	// SignBudget bounds the new DNSSEC signatures this location makes a second, shared fairly
	// between its signed zones (dnssec.Budget); nil means dnssec.DefaultCPUFraction of
	// GOMAXPROCS cores at the signing cost measured when New runs.
	SignBudget *dnssec.Budget
	// NameServers maps the index of each virtual name server this location hosts to the
	// address it listens on. There a zone is answered only when that name server is in the
	// zone's shard, and REFUSED otherwise.
	NameServers map[int]string
	// UDPSize is the largest UDP response, and the payload size the server advertises in its
	// OPT record. Default DefaultUDPSize (1,232 bytes); at least 512.
	UDPSize int
	// Workers is the number of goroutines reading the main listener's UDP socket. Default
	// twice GOMAXPROCS.
	Workers int
	// Budget is the queries a second the main listener answers; 0 means unlimited.
	Budget int
	// NameServerWorkers is the number of UDP workers of each virtual name server. Default
	// DefaultNameServerWorkers.
	NameServerWorkers int
	// NameServerBudget is the queries a second each virtual name server answers, beyond
	// which queries are dropped. Default DefaultNameServerBudget; negative means unlimited.
	NameServerBudget int
	// MaxTCPConns bounds the TCP connections each listener serves at once; further
	// connections are closed at once. Default DefaultMaxTCPConns.
	MaxTCPConns int
	// TCPIdleTimeout closes a TCP connection that sends no query for this long. Default
	// DefaultTCPIdleTimeout.
	TCPIdleTimeout time.Duration
	// MaxTCPConnsPerClient bounds the TCP connections one client network (a /24 for IPv4, a
	// /56 for IPv6, as RRL counts) holds at once on each listener, so that one client cannot
	// take every slot, however many addresses of its network it sends from. Default
	// DefaultMaxTCPConnsPerClient; below MaxTCPConns (lowered to MaxTCPConns-1 when it is
	// not), so that one network always leaves a slot to the others.
	MaxTCPConnsPerClient int
	// TCPConnLifetime closes a TCP connection this long after it was accepted, whatever it
	// asks meanwhile: queries do not keep a connection forever. Default
	// DefaultTCPConnLifetime.
	TCPConnLifetime time.Duration
	// TCPQueriesPerConn closes a TCP connection after this many queries. Default
	// DefaultTCPQueriesPerConn.
	TCPQueriesPerConn int
	// AnswerCache is the number of UDP answers kept in wire form, so that a question asked
	// again is answered by a copy patched with the query's ID and case (cache.go says which
	// answers are kept and when they go stale). Default DefaultAnswerCache; negative turns
	// the cache off, and every query takes the full path.
	AnswerCache int
	// UDPSockets is the number of UDP sockets of each listener, all bound to its address
	// with SO_REUSEPORT so that the kernel spreads the queries over them and no socket is
	// shared by the workers of several cores; the listener's workers are spread over them.
	// Default GOMAXPROCS where SO_REUSEPORT exists, else 1 (also when it cannot be set).
	UDPSockets int
	// RRL configures response rate limiting; off by default.
	RRL RRLConfig
	// Transfer bounds the zone transfers (AXFR, IXFR) and NOTIFY of the zones this location
	// hands to secondaries (SetTransfers), and says where their serials persist.
	Transfer TransferConfig
	// Registerer receives the server's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock of the query budgets and the rate limiter; nil is time.Now.
	Now func() time.Time
}

// Server is a location's authoritative DNS server. Create it with New, install zones with
// SetSnapshot and verdicts with SetVerdicts (both at any time, also while it serves), then
// Run it.
type Server struct {
	cfg      Config
	udpSize  int
	log      *slog.Logger
	now      func() time.Time
	metrics  *metrics
	rrl      *rrl
	snap     atomic.Pointer[Snapshot]
	verdicts atomic.Pointer[verdicts]
	signers  atomic.Pointer[map[string]*dnssec.Signer] // by apex (dnssec.go)
	budget   *dnssec.Budget                            // of new signatures (dnssec.go)
	unsigned atomic.Pointer[map[string]string]         // why, by apex (dnssec.go)
	xfr      *xfr                                      // transfers out, serials, NOTIFY (xfr.go)
	locality atomic.Pointer[routing.Locality]          // for nearest record sets (nearest.go)
	scratch  sync.Pool
	// cache holds answers in wire form (cache.go); nil when Config.AnswerCache is negative.
	cache *answerCache
	// signDrops counts the queries dropped for a spent signing budget since the last log
	// line that said so, and signLogged is when that line was written (Unix nanoseconds).
	signDrops  atomic.Uint64
	signLogged atomic.Int64

	mu        sync.Mutex // serialises swaps and the listeners' setup
	listeners []*listener
	// withheld counts, per health-aware record set of the current snapshot, the records
	// withheld as unhealthy (a set absent: none); guarded by mu.
	withheld map[*rrset]int
	// zoneWithheld sums withheld by zone; guarded by mu.
	zoneWithheld map[string]int
	// changedIDs is PatchVerdicts' scratch list; guarded by mu.
	changedIDs []string
}

// New returns a server for cfg with no zones (every query REFUSED) and no verdicts (every
// check served as healthy) until SetSnapshot and SetVerdicts say otherwise.
func New(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		return nil, errors.New("location: no listen address")
	}
	switch {
	case cfg.UDPSize == 0:
		cfg.UDPSize = DefaultUDPSize
	case cfg.UDPSize < dns.MinMsgSize || cfg.UDPSize > dns.MaxMsgSize:
		return nil, fmt.Errorf("location: udp size %d: want 512 to 65535", cfg.UDPSize)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if cfg.NameServerWorkers <= 0 {
		cfg.NameServerWorkers = DefaultNameServerWorkers
	}
	if cfg.NameServerBudget == 0 {
		cfg.NameServerBudget = DefaultNameServerBudget
	}
	if cfg.MaxTCPConns <= 0 {
		cfg.MaxTCPConns = DefaultMaxTCPConns
	}
	if cfg.TCPIdleTimeout <= 0 {
		cfg.TCPIdleTimeout = DefaultTCPIdleTimeout
	}
	if cfg.MaxTCPConnsPerClient <= 0 {
		cfg.MaxTCPConnsPerClient = DefaultMaxTCPConnsPerClient
	}
	cfg.MaxTCPConnsPerClient = min(cfg.MaxTCPConnsPerClient, max(1, cfg.MaxTCPConns-1))
	if cfg.TCPConnLifetime <= 0 {
		cfg.TCPConnLifetime = DefaultTCPConnLifetime
	}
	if cfg.TCPQueriesPerConn <= 0 {
		cfg.TCPQueriesPerConn = DefaultTCPQueriesPerConn
	}
	for i := range cfg.NameServers {
		if i < 0 {
			return nil, fmt.Errorf("location: virtual name server index %d: must not be negative", i)
		}
	}
	cfg.NameServers = maps.Clone(cfg.NameServers)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	budgetFrom := "configured"
	if cfg.SignBudget == nil {
		cost := dnssec.MeasureSignCost()
		cfg.SignBudget = dnssec.NewBudget(dnssec.BudgetRate(cost, runtime.GOMAXPROCS(0), dnssec.DefaultCPUFraction))
		budgetFrom = fmt.Sprintf("measured: %v a signature, %d cores, %g of them", cost, runtime.GOMAXPROCS(0), dnssec.DefaultCPUFraction)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("location: metrics: %w", err)
	}
	s := &Server{cfg: cfg, udpSize: cfg.UDPSize, log: cfg.Logger, now: cfg.Now, metrics: m, rrl: newRRL(cfg.RRL),
		budget: cfg.SignBudget, cache: newAnswerCache(cfg.AnswerCache)}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(newSignerCollector(s)); err != nil {
			return nil, fmt.Errorf("location: metrics: %w", err)
		}
	}
	s.log.Info("location: dnssec signing budget", "new_signatures_per_second", int(cfg.SignBudget.Rate()), "from", budgetFrom)
	if s.xfr, err = newXfr(s, cfg.Transfer, cfg.Registerer); err != nil {
		return nil, fmt.Errorf("location: transfers: %w", err)
	}
	s.scratch.New = func() any { return newScratch() }
	empty, _ := NewSnapshot(nil, nil)
	s.snap.Store(empty)
	s.verdicts.Store(newVerdictStore(maphash.MakeSeed(), make([]map[string]struct{}, verdictShards), 0))
	return s, nil
}

// SetSnapshot installs snap: every query that starts after it returns reads the new zones, and
// every query reads one snapshot whole.
func (s *Server) SetSnapshot(snap *Snapshot) {
	if snap == nil {
		snap, _ = NewSnapshot(nil, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.xfr.adopt(snap)
	defer s.xfr.poke()
	old := s.snap.Swap(snap)
	s.cache.invalidate()
	s.noteFailures(old, snap)
	for name := range old.zones {
		if snap.zones[name] == nil {
			s.metrics.queries.DeletePartialMatch(prometheus.Labels{"zone": name})
			s.metrics.withheld.DeleteLabelValues(name)
		}
	}
	kept := map[SetName]bool{}
	for rs := range snap.healthSets() {
		kept[rs.setName()] = true
	}
	for rs := range old.healthSets() {
		if !kept[rs.setName()] {
			s.metrics.lastResorts.DeleteLabelValues(rs.label())
		}
	}
	s.updateWithheld()
	s.log.Info("location: zones installed", "zones", len(snap.zones))
}

// Snapshot returns the snapshot in use.
func (s *Server) Snapshot() *Snapshot { return s.snap.Load() }

// SetVerdicts installs this location's verdicts, replacing all of them: for each check ID,
// whether it is served as healthy (map an unknown verdict to true: fail open). Checks absent
// from the map are served as healthy. The server keeps a copy; the next query answers from
// it. A location whose verdicts change a few at a time calls PatchVerdicts.
func (s *Server) SetVerdicts(healthy map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.verdicts.Load()
	v := old.fromMap(healthy)
	s.verdicts.Store(v)
	defer s.xfr.poke()
	snap := s.snap.Load()
	var ids []string
	for id := range snap.byCheck.All("") {
		if old.health(id) != v.health(id) {
			ids = append(ids, id)
		}
	}
	s.recount(snap, v, ids)
}

// PatchVerdicts changes the verdicts of the checks in changes and leaves every other as it
// is. Its cost follows the changes, not the number of checks: the store is copied on write,
// part by part, and only the record sets of checks whose served health changed are counted
// again. Every query that starts after it returns reads the new verdicts.
func (s *Server) PatchVerdicts(changes []VerdictChange) {
	if len(changes) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ids := s.verdicts.Load().patch(changes, s.changedIDs[:0])
	s.verdicts.Store(v)
	defer s.xfr.poke()
	s.recount(s.snap.Load(), v, ids)
	clear(ids)
	s.changedIDs = ids[:0]
}

// recount counts again the withheld records of the record sets that the checks ids can
// change, under the verdicts v. The caller holds s.mu.
func (s *Server) recount(snap *Snapshot, v *verdicts, ids []string) {
	changed := map[*rrset]bool{}
	for _, id := range ids {
		for _, rs := range snap.setsFor(id) {
			changed[rs] = true
		}
	}
	zones := map[*zone]bool{}
	for rs := range changed {
		n := withheldIn(rs, v)
		s.zoneWithheld[rs.in.name] += n - s.withheld[rs]
		s.setWithheld(rs, n)
		zones[rs.in] = true
	}
	for z := range zones {
		// After the verdicts' store: the zone's cached answers are stale from here on. Once
		// a zone, not once a record set: the counter is shared by every answer of the zone.
		z.gen.Add(1)
		s.metrics.withheld.WithLabelValues(z.name).Set(float64(s.zoneWithheld[z.name]))
	}
}

// updateWithheld counts the withheld records of every record set and sets the gauge of every
// zone. The caller holds s.mu.
func (s *Server) updateWithheld() {
	snap, v := s.snap.Load(), s.verdicts.Load()
	s.withheld = map[*rrset]int{}
	s.zoneWithheld = make(map[string]int, len(snap.zones))
	for name := range snap.zones {
		s.zoneWithheld[name] = 0
	}
	for rs := range snap.healthSets() {
		n := withheldIn(rs, v)
		s.setWithheld(rs, n)
		s.zoneWithheld[rs.in.name] += n
	}
	for name, n := range s.zoneWithheld {
		s.metrics.withheld.WithLabelValues(name).Set(float64(n))
	}
}

// setWithheld records that n records of rs are withheld; a set with none withheld is not
// held in the map (most are not, and the map would hold every health set of the snapshot).
func (s *Server) setWithheld(rs *rrset, n int) {
	if n == 0 {
		delete(s.withheld, rs)
		return
	}
	s.withheld[rs] = n
}

// withheldIn returns how many records of rs the verdicts v withhold: the unhealthy ones,
// unless the set is in last resort.
func withheldIn(rs *rrset, v *verdicts) int {
	res, err := routing.Explain(rs.cfg, v.health, 0)
	if err != nil || res.LastResort {
		return 0
	}
	n := 0
	for _, c := range res.Candidates {
		if c.Health == routing.HealthUnhealthy {
			n++
		}
	}
	return n
}

// Respond answers one query given as bytes, without sockets, as the listeners do (without
// their query budgets): it returns the response's bytes, or nil when the query gets none.
func (s *Server) Respond(query []byte, req Request) []byte {
	scr := s.scratch.Get().(*scratch)
	defer s.scratch.Put(scr)
	start := time.Now()
	out, oc := s.answer(scr, query, req)
	s.metrics.observe(listenerLabel(req.NameServer), &oc, time.Since(start))
	return bytes.Clone(out)
}

// Run listens on the configured addresses (unless Listen already did) and serves until ctx
// ends; then it closes every socket and returns when every worker has stopped.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	return s.Serve(ctx)
}
