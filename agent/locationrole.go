package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/history"
	"github.com/vigil-dns/vigil/location/verdict"
)

// locationState is the location's verdict engine and what goes with it. Its own lock (not
// Node.mu) guards it, and every install of verdicts into DNS happens under that lock, so that
// a read (Verdicts, ExplainCheck, the status API) returns what DNS serves.
type locationState struct {
	mu      sync.Mutex
	engine  *verdict.Engine
	cfg     *state.State    // the configuration the engine holds
	window  time.Duration   // its freshness window
	feed    <-chan struct{} // the gossip table's change feed
	wake    chan struct{}   // the configuration changed (capacity 1)
	changes gossip.Changes  // scratch of step
	// out is the verdict changes of the last step, decided at outAt, for recordHistory;
	// served says, for each, whether it changed what DNS serves.
	out    []verdict.Change
	served []bool
	outAt  time.Time
	patch  []location.VerdictChange
	stats  verdict.Stats
	warmAt time.Time // the first step a freshness window after the start
	steps  uint64
	// wholes counts the configurations the engine took whole (ConfigureAll).
	wholes uint64
	// hist is the location's history; pending the scratch of recordHistory: the history
	// changes of one chunk of out.
	hist    *history.Store
	pending []history.Change
}

// engineChanges are the configuration changes the verdict engine has not taken yet: the
// checks changed, or everything (the first configuration, a new source, new quorum
// settings). Node.mu guards them.
type engineChanges struct {
	full   bool
	checks []string
}

// add notes the changes of one configuration change, from old settings to new ones.
func (p *engineChanges) add(ch state.Changes, old, now *config.Document, numChecks int) {
	switch {
	case p.full:
	case ch.Full || old == nil || old.Quorum != now.Quorum:
		*p = engineChanges{full: true}
	default:
		p.checks = append(p.checks, ch.Checks...)
		if len(p.checks) > numChecks {
			*p = engineChanges{full: true} // a walk of every check costs less
		}
	}
}

// newLocation creates the location role's DNS server and binds its sockets.
func (n *Node) newLocation() error {
	var signBudget *dnssec.Budget
	if n.cfg.DNSSECSignBudget > 0 {
		signBudget = dnssec.NewBudget(n.cfg.DNSSECSignBudget)
	}
	s, err := location.New(location.Config{
		SignBudget: signBudget, Addr: n.cfg.DNSAddr, NameServers: n.cfg.NameServers, NameServerBudget: n.cfg.NameServerBudget,
		RRL: n.cfg.RRL, MaxTCPConns: n.cfg.DNSTCP.MaxConns, MaxTCPConnsPerClient: n.cfg.DNSTCP.MaxConnsPerClient,
		TCPIdleTimeout: n.cfg.DNSTCP.IdleTimeout, TCPConnLifetime: n.cfg.DNSTCP.Lifetime,
		AnswerCache: n.cfg.AnswerCache, UDPSockets: n.cfg.UDPSockets,
		Transfer:   location.TransferConfig{DataDir: n.cfg.DataDir},
		Registerer: n.reg, Logger: n.log,
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := s.Listen(); err != nil {
		return fmt.Errorf("node: dns: %w", err)
	}
	n.dns = s
	n.loc.engine = verdict.New()
	if n.loc.hist, err = history.Open(history.Options{Path: filepath.Join(n.cfg.DataDir, "history.log"),
		MaxBytes: n.cfg.HistoryBytes, Logger: n.log}, time.Now()); err != nil {
		closeDNS(s)
		n.dns = nil
		return fmt.Errorf("node: %w", err)
	}
	n.loc.wake = make(chan struct{}, 1)
	n.ovr.wake = make(chan struct{}, 1)
	s.PatchVerdicts([]location.VerdictChange{{Check: DrainCheck, Healthy: false}})
	n.loc.feed = n.pool.Feed()
	if n.lm, err = newLocationMetrics(n.reg, n); err != nil {
		return err
	}
	n.mu.Lock()
	st := n.state
	n.mu.Unlock()
	if st != nil {
		n.installZones(st, state.Changes{Full: true})
		n.setOverrides(st)
	}
	return nil
}

// closeDNS closes the sockets of a server that was never served.
func closeDNS(s *location.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Serve(ctx)
}

// Limits of one step of the verdict engine.
const (
	// maxDrain bounds the reports one step takes from the gossip table, so that the lock is
	// never held for a whole table (a location that starts, or a checker's row repaired).
	maxDrain = 4096
	// minStepGap spaces steps woken by the table: changes that arrive within it are decided
	// together, and a report waits at most this long for its step.
	minStepGap = 2 * time.Millisecond
)

// scratch empties a scratch slice for the next step, keeping its room unless a burst (a
// location's first verdicts: one per check) made it larger than steps usually need.
func scratch[T any](s []T) []T {
	if cap(s) > maxDrain {
		return nil
	}
	return s[:0]
}

// runVerdicts keeps the verdicts up to date until ctx ends: it steps when the gossip table
// changed, when the configuration changed and when the engine's next timer (a checker going
// stale, a hold running out) falls due. No tick: a report that changes a verdict reaches DNS
// within a step of its arrival.
//
// It decides nothing before the node joined the pool: a location that has heard no checker
// yet has no verdict (DNS serves every check as healthy, the reads show none), rather than
// an unknown verdict for every check the moment its configuration is there.
func (n *Node) runVerdicts(ctx context.Context) error {
	l := &n.loc
	n.awaitJoin(ctx, maxJoinWait)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		start := time.Now()
		more, next := n.step()
		n.recordHistory()
		if !more {
			d := time.Hour
			if !next.IsZero() {
				d = max(time.Until(next), 0)
			}
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return nil
			case <-l.feed:
			case <-l.wake:
			case <-timer.C:
			}
			timer.Stop()
		}
		if gap := minStepGap - time.Since(start); gap > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(gap):
			}
		}
	}
}

// wakeVerdicts asks runVerdicts for a step (the configuration changed).
func (n *Node) wakeVerdicts() {
	select {
	case n.loc.wake <- struct{}{}:
	default:
	}
}

// configureEngine hands the verdict engine the configuration changes it has not taken: the
// changed checks, read from the configuration in use, or every check when it must be taken
// whole. Called with l.mu held.
func (n *Node) configureEngine() {
	l := &n.loc
	n.mu.Lock()
	s, pending := n.state, n.engineCh
	n.engineCh = engineChanges{}
	n.mu.Unlock()
	if s == nil || s == l.cfg {
		return
	}
	if pending.full || l.cfg == nil {
		settings := s.Settings()
		l.engine.ConfigureAll(settings.Quorum, s.Checks())
		l.window = freshnessWindow(&settings)
		l.wholes++
	} else {
		l.engine.ConfigureChecks(pending.checks, s.CheckRef)
	}
	l.cfg = s
}

// step brings the verdicts up to date: it hands the engine the configuration if it changed
// and what the gossip table changed since the last step (up to maxDrain reports), lets it
// fire its timers and re-decide at now, and installs the changed verdicts in DNS, all under
// the location's lock. It returns whether the table holds more changes, and when the
// engine's next timer (or the end of the warm-up) falls due (zero: none).
func (n *Node) step() (more bool, next time.Time) {
	l := &n.loc
	l.mu.Lock()
	defer l.mu.Unlock()
	n.configureEngine()
	more = n.pool.Drain(maxDrain, &l.changes)
	l.engine.Apply(&l.changes)
	now := time.Now() // after the drain: no progress it took is later than now
	t0 := now
	l.engine.Advance(now)
	// The changes stay in l.out for recordHistory, which runVerdicts calls next.
	l.out, l.outAt = l.engine.Changes(l.out[:0]), now
	l.patch, l.served = l.patch[:0], l.served[:0]
	for _, c := range l.out {
		// Only what DNS is to serve differently: a location's first verdicts (every check
		// unknown, then healthy, a million at once) change nothing it serves.
		healthy := n.ovr.serve(c.Check, c.Serving())
		served := healthy != n.dns.Served(c.Check)
		if served {
			l.patch = append(l.patch, location.VerdictChange{Check: c.Check, Healthy: healthy})
		}
		l.served = append(l.served, served)
	}
	n.dns.PatchVerdicts(l.patch)
	clear(l.patch)
	l.patch = scratch(l.patch)
	l.steps++
	window := l.window
	if l.warmAt.IsZero() {
		if now.Sub(n.started) >= window && !n.started.IsZero() {
			l.warmAt = now
		} else if !n.started.IsZero() {
			next = n.started.Add(window)
		}
	}
	if at, ok := l.engine.Next(); ok && (next.IsZero() || at.Before(next)) {
		next = at
	}
	stats := l.engine.Stats()
	if stats.Advances > l.stats.Advances {
		n.m.observe(l.engine.Counts(), stats.Advances-l.stats.Advances, stats.Evaluations-l.stats.Evaluations, time.Since(t0).Seconds())
	}
	l.stats = stats
	return more, next
}
