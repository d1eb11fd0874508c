package node

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/quorum"
)

// TestLocationMetrics registers the location metrics in a fresh registry, observes two
// checkers (one fresh, one stale) and lints the names.
func TestLocationMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := newLocationMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	doc := &config.Document{Regions: []string{"r1", "r2"}}
	doc.Quorum.FreshnessWindow = config.Duration(5 * time.Second)
	reports := []gossip.Report{
		{Check: "web", Checker: "c1", Region: "r1", Entry: gossip.Entry{Status: gossip.StatusHealthy, Latency: 20 * time.Millisecond}, LastProgress: now.Add(-time.Second)},
		{Check: "web", Checker: "c2", Region: "r2", Entry: gossip.Entry{Status: gossip.StatusHealthy}, LastProgress: now.Add(-time.Minute)},
	}
	m.changed("web", quorum.StateHealthy)
	m.observe(map[string]quorum.Verdict{"web": {State: quorum.StateHealthy}}, reports, nil, doc, now)

	if got := testutil.ToFloat64(m.fresh); got != 1 {
		t.Errorf("fresh checkers = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.known); got != 2 {
		t.Errorf("known checkers = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.votes.WithLabelValues("web", "r2", "stale")); got != 1 {
		t.Errorf("stale votes from r2 = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.verdicts.WithLabelValues("web", "healthy")); got != 1 {
		t.Errorf("verdict healthy = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.latency.WithLabelValues("web", "r1")); got != 0.02 {
		t.Errorf("latency r1 = %v, want 0.02", got)
	}
	// A checker that is gone from the table is gone from the gauges.
	m.observe(map[string]quorum.Verdict{"web": {State: quorum.StateHealthy}}, reports[:1], nil, doc, now)
	if n := testutil.CollectAndCount(m.lastHeard); n != 1 {
		t.Errorf("last-heard series after c2 left: %d, want 1", n)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "vigil_") {
			t.Errorf("metric %s lacks the vigil_ prefix", mf.GetName())
		}
	}
}
