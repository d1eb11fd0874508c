package checker

import (
	"container/heap"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
)

// DefaultConcurrency is the default limit of probes in flight at once.
const DefaultConcurrency = 64

// Options configure a Checker.
type Options struct {
	// Name is this checker's name; with each check's id it seeds where in the interval the
	// check is probed.
	Name string
	// Concurrency is the most probes in flight at once; it is also the number of probing
	// goroutines, whatever the number of checks. Default DefaultConcurrency.
	Concurrency int
	// Prober configures the probes: dialer, resolver, address policy, trusted roots.
	Prober ProberOptions
	// Canaries are checks of targets that should always answer. They are probed like any
	// check but never reported; they only tell the checker whether it can reach anything.
	Canaries []config.Check
	// Isolation says when the checker considers its own network down.
	Isolation IsolationPolicy
	// Registerer receives the checker's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger logs changes of self-health and rejected checks; default slog.Default().
	Logger *slog.Logger
	// OnReport receives every report emitted, one at a time, in Seq order. It may call the
	// Checker's methods; it should return quickly, as it holds up later reports.
	OnReport func(Report)
	// OnSelf receives every change of the checker's self-health, in order with the reports.
	OnSelf func(SelfHealth)
	// OnResult, when set, receives every probe result of an assigned check (not canaries),
	// with Result.Lag set. It is called from probing goroutines: keep it quick.
	OnResult func(checkID string, r Result)
}

// Checker probes the checks assigned to it and reports their status. Create it with New,
// assign checks with SetChecks (at any time, as often as assignment changes) and probe with
// Run.
type Checker struct {
	name     string
	conc     int
	prober   *Prober
	metrics  *metrics
	log      *slog.Logger
	onReport func(Report)
	onSelf   func(SelfHealth)
	onResult func(string, Result)
	wake     chan struct{}

	mu       sync.Mutex
	running  bool
	slots    map[string]*slot
	canaries []*slot
	queue    slotHeap
	self     selfTracker
	seq      uint64
	returns  uint64 // times the checker came back from isolation

	pending []event    // stamped, not yet delivered; guarded by mu
	emitMu  sync.Mutex // held by the goroutine delivering pending events
}

// slot is the checker's state for one assigned check (or canary).
type slot struct {
	check    *config.Check // replaced, never mutated: a probe in flight keeps its copy
	next     time.Time
	index    int // in the queue, -1 when not queued
	inFlight bool
	removed  bool
	canary   bool
	reported bool // a report that is not withdrawn is out
	rf       RiseFall
	heldAt   uint64 // selfTracker.successes when a turn to unhealthy was last held; 0 never
	last     Result // the latest probe's, whole: the report and LastResult read it
	seq      uint64 // of the latest report emitted for this check
}

// New returns a Checker with no checks assigned.
func New(opts Options) (*Checker, error) {
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Checker{
		name:     opts.Name,
		conc:     opts.Concurrency,
		prober:   NewProber(opts.Prober),
		metrics:  m,
		log:      opts.Logger,
		onReport: opts.OnReport,
		onSelf:   opts.OnSelf,
		onResult: opts.OnResult,
		wake:     make(chan struct{}, 1),
		slots:    map[string]*slot{},
	}
	if c.conc <= 0 {
		c.conc = DefaultConcurrency
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	m.concurrencyLm.Set(float64(c.conc))
	now := time.Now()
	for i := range opts.Canaries {
		cc := opts.Canaries[i]
		if err := validateCheck(&cc); err != nil {
			return nil, fmt.Errorf("checker: canary %d: %w", i, err)
		}
		s := &slot{check: &cc, canary: true, index: -1}
		s.next = firstDue(now, cc.Interval.Std(), spreadHash(c.name, "canary\x00"+cc.ID))
		c.canaries = append(c.canaries, s)
		heap.Push(&c.queue, s)
	}
	c.self = newSelfTracker(opts.Isolation, len(c.canaries))
	return c, nil
}

// SetChecks replaces the set of assigned checks. New checks are scheduled at their place in
// their interval; removed checks stop and their reports are withdrawn; a check whose probe
// changed has its report withdrawn and starts over; a check whose thresholds or interval
// changed keeps its state. Calculated and disabled checks are not probed (locations evaluate
// them; a disabled check is healthy whatever probes say), so they are left out too. Checks
// that cannot be probed, and repeated ids, are left out and listed in the returned error;
// every other check is applied.
func (c *Checker) SetChecks(checks []config.Check) error {
	var errs []error
	var out []Report
	now := time.Now()
	c.mu.Lock()
	keep := make(map[string]bool, len(checks))
	for i := range checks {
		nc := &checks[i]
		if nc.Protocol == config.ProtocolCalculated || nc.Disabled {
			continue // not probed: locations evaluate these
		}
		if err := validateCheck(nc); err != nil {
			errs = append(errs, err)
			continue
		}
		if keep[nc.ID] {
			errs = append(errs, fmt.Errorf("checker: check %q assigned twice; the first is kept", nc.ID))
			continue
		}
		keep[nc.ID] = true
		cp := *nc
		s, ok := c.slots[nc.ID]
		if !ok {
			s = &slot{check: &cp, index: -1}
			s.next = firstDue(now, cp.Interval.Std(), spreadHash(c.name, cp.ID))
			c.slots[cp.ID] = s
			heap.Push(&c.queue, s)
			continue
		}
		if reflect.DeepEqual(s.check, &cp) {
			continue
		}
		if !sameProbe(s.check, &cp) {
			if s.reported {
				out = append(out, c.withdrawLocked(s, WithdrawChanged))
			}
			s.rf, s.last = RiseFall{}, Result{}
		}
		if s.check.Interval != cp.Interval {
			s.next = firstDue(now, cp.Interval.Std(), spreadHash(c.name, cp.ID))
			heap.Fix(&c.queue, s.index)
		}
		s.check = &cp
	}
	for id, s := range c.slots {
		if keep[id] {
			continue
		}
		if s.reported {
			out = append(out, c.withdrawLocked(s, WithdrawRemoved))
		}
		s.removed = true
		heap.Remove(&c.queue, s.index)
		delete(c.slots, id)
	}
	c.metrics.assigned.Set(float64(len(c.slots)))
	c.emitLocked(out, nil)
	c.poke()
	if len(errs) > 0 {
		err := errors.Join(errs...)
		c.log.Warn("checker: checks rejected", "count", len(errs), "err", err)
		return err
	}
	return nil
}

// sameProbe reports whether a and b probe the same way (only thresholds, interval, regions
// or quorum settings may differ).
func sameProbe(a, b *config.Check) bool {
	x, y := *a, *b
	for _, c := range []*config.Check{&x, &y} {
		c.Interval, c.FailureThreshold, c.SuccessThreshold = 0, 0, 0
		c.Regions, c.AllowFewerRegions, c.CheckersPerRegion = nil, false, 0
		c.HealthyThreshold, c.MinReporters, c.Inverted, c.Disabled = 0, 0, false, false
		c.Children, c.MinHealthy = nil, 0
	}
	return reflect.DeepEqual(x, y)
}

// withdrawLocked marks s's report withdrawn and returns the withdrawal to emit.
func (c *Checker) withdrawLocked(s *slot, why string) Report {
	r := s.report()
	r.Withdrawn, r.Withdraw = true, why
	s.reported = false
	c.metrics.withdrawn.WithLabelValues(why).Inc()
	return c.stampLocked(r)
}

// stampLocked gives r the next sequence number.
func (c *Checker) stampLocked(r Report) Report {
	c.seq++
	r.Seq = c.seq
	if s, ok := c.slots[r.CheckID]; ok {
		s.seq = c.seq
	}
	return r
}

// poke wakes the dispatcher to look at the queue again.
func (c *Checker) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Reports returns the checker's current reports (not withdrawn ones), sorted by check id.
// While the checker is isolated it has none.
func (c *Checker) Reports() []Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Report, 0, len(c.slots))
	for _, s := range c.slots {
		if s.reported {
			r := s.report()
			r.Seq = s.seq
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CheckID < out[j].CheckID })
	return out
}

// LastResult returns the latest probe result of the assigned check id while a report of it
// is out (as Reports lists it), with what the report leaves out: the probe's lag, HTTP
// status, redirects and protocol.
func (c *Checker) LastResult(id string) (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.slots[id]
	if s == nil || !s.reported {
		return Result{}, false
	}
	return s.last, true
}

// Self returns the checker's self-health.
func (c *Checker) Self() SelfHealth {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.self.health()
}
