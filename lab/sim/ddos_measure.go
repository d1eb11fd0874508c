package sim

// The ddos scenario's measurement: every (zone, server) pair and every zone's resolver asked
// at a steady rate, before and during the flood.

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-dns/vigil/agent"
)

// measure probes every target for cfg.Before, then floods the victim's servers for cfg.Flood
// while probing on, and fills run with the figures.
func measure(ctx context.Context, cfg DDoSConfig, nd *agent.Node, run *DDoSRun, targets []ddosTarget) error {
	ps, err := newProbes(cfg, run.Zones, targets)
	defer ps.close()
	if err != nil {
		return err
	}
	wait := max(cfg.ProbeTimeout, time.Duration(cfg.ShardSize)*cfg.TryTimeout)
	var victimAddrs []string
	for _, s := range run.VictimServers {
		victimAddrs = append(victimAddrs, nd.NameServerAddr(s))
	}
	dropsBefore, answeredBefore := victimCounters(nd, run)

	start := time.Now()
	floodAt := start.Add(cfg.Before)
	end := floodAt.Add(cfg.Flood)
	ctx, cancel := context.WithDeadline(ctx, end.Add(wait))
	defer cancel()
	samples := ps.start(ctx, cfg.ProbeInterval, start, end)
	timeline(cfg.Timeline, "probing %d (zone, server) pairs and resolving %d zones every %v; flood in %v", len(targets), len(ps.series)-len(targets), cfg.ProbeInterval, cfg.Before)
	var sent atomic.Int64
	var floodErr error
	if sleepUntil(ctx, floodAt) {
		timeline(cfg.Timeline, "flood: %d q/s to each of %s for %v, %d sender(s) each", cfg.FloodRate, strings.Join(victimAddrs, ", "), cfg.Flood, cfg.FloodSenders)
		floodStart := time.Now()
		cpu0, ok0 := processCPU()
		run.Load = loadAverage()
		floodErr = flood(ctx, victimAddrs, "www."+run.Victim, cfg.FloodRate, cfg.FloodSenders, end, &sent)
		run.FloodTook = time.Since(floodStart)
		if cpu1, ok1 := processCPU(); ok0 && ok1 {
			run.CPU = cpu1 - cpu0
		}
	}
	all := samples()
	run.FloodSent = sent.Load()
	dropsAfter, answeredAfter := victimCounters(nd, run)
	run.BudgetDrops, run.VictimAnswered = dropsAfter-dropsBefore, answeredAfter-answeredBefore
	timeline(cfg.Timeline, "flood over: %d queries sent in %v (%.0f q/s per server); %.0f dropped by the budgets, %.0f of the victim's queries answered",
		run.FloodSent, run.FloodTook.Round(time.Millisecond), float64(run.FloodSent)/max(run.FloodTook.Seconds(), 1e-3)/float64(len(victimAddrs)),
		run.BudgetDrops, run.VictimAnswered)
	run.Groups = groupSamples(ps.series, all, floodAt, end)
	return floodErr
}

// probes are the series measure asks: one per (zone, server) pair, then one resolver per zone.
type probes struct {
	series  []ddosTarget
	asks    []func(time.Time) ddosSample
	probers []*prober // every socket, to close
}

// newProbes opens a prober per target, and for each zone's resolver a prober per server of
// its own. The probes must be closed, even on an error.
func newProbes(cfg DDoSConfig, zones int, targets []ddosTarget) (*probes, error) {
	ps := &probes{probers: make([]*prober, 0, 2*len(targets)), series: make([]ddosTarget, 0, len(targets)+zones),
		asks: make([]func(time.Time) ddosSample, 0, len(targets)+zones)}
	for _, t := range targets {
		p, err := newProber(t)
		if err != nil {
			return ps, err
		}
		ps.probers = append(ps.probers, p)
		ps.series = append(ps.series, t)
		ps.asks = append(ps.asks, func(now time.Time) ddosSample { return p.ask(now, cfg.ProbeTimeout) })
	}
	// Each zone's resolver has its own sockets, one per name server.
	byZone := map[int][]*prober{}
	for _, t := range targets {
		p, err := newProber(t)
		if err != nil {
			return ps, err
		}
		ps.probers = append(ps.probers, p)
		byZone[t.zone] = append(byZone[t.zone], p)
	}
	for z := range zones {
		zp := byZone[z]
		if len(zp) == 0 {
			continue
		}
		meta := zp[0].t
		meta.server, meta.addr, meta.shared, meta.resolver = -1, "", false, true
		ps.series = append(ps.series, meta)
		ps.asks = append(ps.asks, func(now time.Time) ddosSample { return resolve(zp, now, cfg.TryTimeout) })
	}
	return ps, nil
}

// close closes every prober's socket.
func (ps *probes) close() {
	for _, p := range ps.probers {
		p.close()
	}
}

// start asks every series every interval from start until end (or until ctx ends), each from
// a goroutine of its own; samples waits until they have stopped and returns their samples, by
// series.
func (ps *probes) start(ctx context.Context, interval time.Duration, start, end time.Time) (samples func() [][]ddosSample) {
	out := make([][]ddosSample, len(ps.series))
	var wg sync.WaitGroup
	for i, ask := range ps.asks {
		wg.Go(func() {
			// Each prober starts at its own offset in the interval, so that probes spread.
			next := start.Add(time.Duration(rand.Int64N(int64(interval))))
			limit := int((end.Sub(start))/interval) + 2
			for len(out[i]) < limit {
				if !sleepUntil(ctx, next) {
					return
				}
				now := time.Now()
				if !now.Before(end) {
					return
				}
				out[i] = append(out[i], ask(now))
				next = next.Add(interval)
				if next.Before(time.Now()) {
					next = time.Now() // a slow answer does not make the prober catch up in a burst
				}
			}
		})
	}
	return func() [][]ddosSample {
		wg.Wait()
		return out
	}
}

// sleepUntil waits until t and reports whether ctx is still alive.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
