package verdict

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/quorum"
)

// TestCheckerListsUnderChurn: reports set and withdrawn many times over leave each checker's
// list of checks bounded (compacted past twice its reports), its count of reports right, and
// a change of its freshness re-decides exactly the checks it reports: the engine agrees with
// one given only the reports that remain, check by check, and re-decides as many checks.
// Checks that leave and rejoin the configuration meanwhile reuse the places of others.
func TestCheckerListsUnderChurn(t *testing.T) {
	const checks = 600
	doc := &config.Document{}
	doc.Quorum.FreshnessWindow = config.Duration(5 * time.Second)
	for i := range checks {
		doc.Checks = append(doc.Checks, config.Check{ID: fmt.Sprintf("k%d", i), Protocol: config.ProtocolTCP,
			HealthyThreshold: 0.5, MinReporters: 1})
	}
	rng := rand.New(rand.NewPCG(7, 7))
	churned := New()
	churned.Configure(doc)
	held := map[string]map[string]gossip.Entry{"a": {}, "b": {}}
	for round := range 40 {
		for range 300 {
			k := []string{"a", "b"}[rng.IntN(2)]
			id := fmt.Sprintf("k%d", rng.IntN(checks+50)) // 50 ids outside the configuration
			if rng.IntN(2) == 0 {
				r := gossipEntry(true, rng.IntN(2) == 0)
				churned.SetReport(id, k, r)
				held[k][id] = r
			} else {
				churned.DeleteReport(id, k)
				delete(held[k], id)
			}
		}
		for k, reports := range held {
			ck := &churned.checkers[churned.names[k]]
			if int(ck.reports) != len(reports) {
				t.Fatalf("round %d: checker %s counts %d reports, holds %d", round, k, ck.reports, len(reports))
			}
			if len(ck.checks) > 2*len(reports)+64 {
				t.Fatalf("round %d: checker %s lists %d checks for %d reports", round, k, len(ck.checks), len(reports))
			}
		}
	}
	fresh := New()
	fresh.Configure(doc)
	for k, reports := range held {
		for id, r := range reports {
			fresh.SetReport(id, k, r)
		}
	}
	// Both heard from at t0, decided; then a goes stale: each re-decides a's checks.
	for _, e := range []*Engine{churned, fresh} {
		e.Progress("a", "r1", t0)
		e.Progress("b", "r2", t0)
		e.Advance(t0)
		e.Progress("b", "r2", t0.Add(4*time.Second))
		e.Advance(t0.Add(4 * time.Second))
		e.Changes(nil)
	}
	before := [2]uint64{churned.Stats().Evaluations, fresh.Stats().Evaluations}
	for _, e := range []*Engine{churned, fresh} {
		e.Advance(t0.Add(6 * time.Second))
	}
	if c, f := churned.Stats().Evaluations-before[0], fresh.Stats().Evaluations-before[1]; c != f {
		t.Fatalf("a going stale re-decided %d checks after churn, %d without", c, f)
	}
	compareEngines(t, churned, fresh)
	churned.RemoveChecker("a")
	fresh.RemoveChecker("a")
	churned.Advance(t0.Add(7 * time.Second))
	fresh.Advance(t0.Add(7 * time.Second))
	compareEngines(t, churned, fresh)
	churned.Checkers(func(c quorum.HeardChecker) {
		if c.ID == "a" || c.Reports != len(held["b"]) {
			t.Fatalf("after a's removal: checker %+v, want b with %d reports", c, len(held["b"]))
		}
	})
}

// compareEngines fails unless a and b hold the same verdict for every check.
func compareEngines(t *testing.T, a, b *Engine) {
	t.Helper()
	if ac, bc := a.Counts(), b.Counts(); ac != bc {
		t.Fatalf("counts %v and %v", ac, bc)
	}
	n := 0
	a.Each(nil, func(id string, v quorum.Verdict) {
		n++
		w, ok := b.Verdict(id, nil)
		if !ok || w.State != v.State || w.Rule != v.Rule || !w.Since.Equal(v.Since) || w.Counts != v.Counts {
			t.Fatalf("check %s: %+v and %+v (%v)", id, v, w, ok)
		}
	})
	if _, decided := b.Len(); decided != n {
		t.Fatalf("%d and %d checks decided", n, decided)
	}
}
