package dev

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/shard"
)

// checkerNode is one checker: a gossip node that publishes the reports of a checker.Checker
// probing the checks its shuffle shards give it, as its own view of the pool computes them.
type checkerNode struct {
	id, region string
	pool       *gossip.Node
	chk        *checker.Checker
	log        *slog.Logger
}

// publish puts one report of the checker into the pool.
func (c *checkerNode) publish(r checker.Report) {
	var err error
	if r.Withdrawn || r.Status == checker.StatusUnknown {
		err = c.pool.Withdraw(r.CheckID)
	} else {
		reason := string(r.Reason)
		if r.Message != "" {
			reason += ": " + r.Message
		}
		st := gossip.StatusHealthy
		if r.Status == checker.StatusUnhealthy {
			st = gossip.StatusUnhealthy
		}
		err = c.pool.Publish(r.CheckID, gossip.Entry{
			Status: st, Consecutive: uint32(min(max(r.Consecutive, 0), 1<<31)),
			Latency: r.Latency, Reason: reason,
		})
	}
	if err != nil {
		c.log.Warn("dev: publish report", "checker", c.id, "check", r.CheckID, "err", err)
	}
}

// assign runs the assignment until ctx ends: every tick, the checks this checker's shards
// give it under the current configuration and the pool's live checkers as it sees them.
func (c *checkerNode) assign(ctx context.Context, cfg *configHolder, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last []string
	for {
		if doc := cfg.document(); doc != nil {
			ids, checks := c.checksFor(doc)
			if !slices.Equal(ids, last) {
				if err := c.chk.SetChecks(checks); err != nil {
					c.log.Warn("dev: assign checks", "checker", c.id, "err", err)
				}
				last = ids
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-cfg.changed():
			last = nil
		}
	}
}

// checksFor returns the ids and the checks this checker probes under doc.
func (c *checkerNode) checksFor(doc *config.Document) ([]string, []config.Check) {
	m := shard.Membership(c.pool.Checkers())
	for r := range m {
		if !slices.Contains(doc.Regions, r) {
			delete(m, r)
		}
	}
	plan, err := shard.NewPlan(doc, m)
	if err != nil {
		c.log.Warn("dev: assignment", "checker", c.id, "err", err)
		return nil, nil
	}
	ids := plan.ChecksFor(c.region, c.id)
	checks := make([]config.Check, 0, len(ids))
	for _, id := range ids {
		if i := slices.IndexFunc(doc.Checks, func(ch config.Check) bool { return ch.ID == id }); i >= 0 {
			checks = append(checks, doc.Checks[i])
		}
	}
	return ids, checks
}
