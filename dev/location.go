package dev

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/shard"
)

// locationNode is one DNS location: a gossip node that hears the checkers' reports, decides
// a verdict per check by quorum, and answers DNS from the verdicts.
type locationNode struct {
	id, region string
	pool       *gossip.Node
	dns        *location.Server
	httpAddr   string // where /metrics, /healthz and /readyz are served
	metrics    *locationMetrics
	log        *slog.Logger

	mu       sync.Mutex
	index    uint64                    // the configuration index of the installed snapshot
	verdicts map[string]quorum.Verdict // by check id; rebuilt with each configuration
}

// Verdicts returns the location's current verdict of every check.
func (l *locationNode) Verdicts() map[string]quorum.Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]quorum.Verdict, len(l.verdicts))
	for k, v := range l.verdicts {
		out[k] = v
	}
	return out
}

// ready reports whether the location serves a configuration.
func (l *locationNode) ready() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.index > 0
}

// loop re-evaluates every check each tick until ctx ends.
func (l *locationNode) loop(ctx context.Context, cfg *configHolder, every time.Duration, now func() time.Time) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if s := cfg.current(); s != nil {
			if l.install(s) {
				l.evaluate(&s.Document, now())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-cfg.changed():
		}
	}
}

// install compiles the zones of a new configuration and drops verdicts of removed checks.
// It reports whether the location serves a configuration.
func (l *locationNode) install(s *control.State) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.Index == l.index {
		return true
	}
	doc := &s.Document
	snap, err := snapshot(s)
	if err != nil {
		l.log.Error("dev: location: zones refused", "location", l.id, "err", err)
		return l.index > 0
	}
	l.dns.SetSnapshot(snap)
	kept := make(map[string]quorum.Verdict, len(doc.Checks))
	for _, c := range doc.Checks {
		if v, ok := l.verdicts[c.ID]; ok {
			kept[c.ID] = v
		}
	}
	l.verdicts = kept
	l.index = s.Index
	return true
}

// snapshot compiles the zones of s, each with its shard of virtual name servers: the one
// the control plane allocated, or the one derived from the zone's name.
func snapshot(s *control.State) (*location.Snapshot, error) {
	doc := &s.Document
	fleet, err := shard.NewNameServers(doc.NameServers)
	if err != nil {
		return nil, fmt.Errorf("dev: name servers: %w", err)
	}
	shards := make(map[string][]location.NameServer, len(doc.Zones))
	for _, z := range doc.Zones {
		apex := control.CanonicalZone(z.Name)
		idx, ok := s.Shards[apex]
		if !ok {
			idx = fleet.Stateless(apex)
		}
		shards[apex] = location.ShardNameServers(idx, doc.NameServers.Domain, nil)
	}
	return location.NewSnapshot(doc.Zones, shards)
}

// evaluate decides every check of doc at now from the reports this location holds, and
// installs the verdicts in the DNS server.
func (l *locationNode) evaluate(doc *config.Document, now time.Time) {
	m := shard.Membership(l.pool.Checkers())
	for r := range m {
		if !slices.Contains(doc.Regions, r) {
			delete(m, r)
		}
	}
	plan, err := shard.NewPlan(doc, m)
	if err != nil {
		plan = nil
		l.log.Warn("dev: location: assignment", "location", l.id, "err", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	byID := make(map[string]config.Check, len(doc.Checks))
	for _, c := range doc.Checks {
		byID[c.ID] = c
	}
	done := make(map[string]bool, len(doc.Checks))
	var decide func(c config.Check, depth int) quorum.Verdict
	decide = func(c config.Check, depth int) quorum.Verdict {
		if done[c.ID] || depth > len(doc.Checks) {
			return l.verdicts[c.ID]
		}
		prev := l.verdicts[c.ID]
		var v quorum.Verdict
		if c.Protocol == config.ProtocolCalculated {
			children := make([]quorum.Verdict, 0, len(c.Children))
			for _, id := range c.Children {
				children = append(children, decide(byID[id], depth+1))
			}
			v = quorum.Combine(c.MinHealthy, children, c.Inverted, c.Disabled, prev, now)
		} else {
			var expected []string
			if plan != nil {
				for _, r := range c.Regions {
					expected = append(expected, plan.Shard(c.ID, r)...)
				}
			}
			v = quorum.Evaluate(quorum.PolicyFor(c, doc.Quorum), l.reports(c.ID), expected, prev, now)
		}
		if prev.State != v.State || prev.At.IsZero() {
			l.metrics.changed(c.ID, v.State)
		}
		l.verdicts[c.ID] = v
		done[c.ID] = true
		return v
	}
	serving := make(map[string]bool, len(doc.Checks))
	for _, c := range doc.Checks {
		serving[c.ID] = decide(c, 0).Serving()
	}
	l.dns.SetVerdicts(serving)
	l.metrics.observe(l.verdicts, l.pool.Reports(), plan, doc, now)
}

// reports converts the reports this location holds for one check.
func (l *locationNode) reports(check string) []quorum.Report {
	in := l.pool.ReportsFor(check)
	out := make([]quorum.Report, 0, len(in))
	for _, r := range in {
		if r.Entry.Status == gossip.StatusUnknown {
			continue
		}
		out = append(out, quorum.Report{
			Checker: r.Checker, Region: r.Region, Healthy: r.Entry.Status == gossip.StatusHealthy,
			Reason: r.Entry.Reason, Latency: r.Entry.Latency, Sequence: r.Seq,
			LastProgress: r.LastProgress,
		})
	}
	return out
}
