package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location/verdict"
)

// gathered returns the value of the series of name whose labels are labels (name=value
// pairs), and how many series name has.
func gathered(t *testing.T, mfs []*dto.MetricFamily, name string, labels ...string) (float64, int) {
	t.Helper()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		val := -1.0
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				val = m.Gauge.GetValue()
			case m.Counter != nil:
				val = m.Counter.GetValue()
			}
		}
		return val, len(mf.GetMetric())
	}
	return -1, 0
}

// TestLocationMetrics registers the location metrics in a fresh registry, reads them from a
// verdict engine holding four checkers (three fresh: healthy, unhealthy and not decided yet;
// one stale), and lints the names.
func TestLocationMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	n := &Node{}
	n.loc.engine = verdict.New()
	if _, err := newLocationMetrics(reg, n); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	doc := &config.Document{Regions: []string{"r1", "r2"}, Checks: []config.Check{{ID: "web", Protocol: config.ProtocolHTTP, MinReporters: 1, HealthyThreshold: 0.18}}}
	doc.Quorum.FreshnessWindow = config.Duration(5 * time.Second)
	e := n.loc.engine
	e.Configure(doc)
	e.Progress("c1", "r1", now.Add(-time.Second))
	e.Progress("c2", "r2", now.Add(-time.Minute))
	e.SetReport("web", "c1", gossip.Entry{Status: checker.StatusHealthy, Latency: 20 * time.Millisecond})
	e.SetReport("web", "c2", gossip.Entry{Status: checker.StatusHealthy})
	e.Progress("c3", "r1", now.Add(-time.Second))
	e.SetReport("web", "c3", gossip.Entry{})
	e.Progress("c4", "r2", now.Add(-time.Second))
	e.SetReport("web", "c4", gossip.Entry{Status: checker.StatusUnhealthy, Latency: 30 * time.Millisecond})
	e.Advance(now)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vigil_location_checkers_fresh", nil, 3},
		{"vigil_location_checkers_known", nil, 4},
		{"vigil_location_votes", []string{"check", "web", "region", "r2", "vote", "stale"}, 1},
		{"vigil_location_votes", []string{"check", "web", "region", "r1", "vote", "healthy"}, 1},
		{"vigil_location_votes", []string{"check", "web", "region", "r1", "vote", "unknown"}, 1},
		{"vigil_location_votes", []string{"check", "web", "region", "r2", "vote", "unhealthy"}, 1},
		{"vigil_location_verdict", []string{"check", "web", "state", "healthy"}, 1},
		{"vigil_location_verdict", []string{"check", "web", "state", "unknown"}, 0},
		{"vigil_location_verdict_changes_total", []string{"check", "web", "state", "healthy"}, 1},
		{"vigil_location_report_latency_seconds", []string{"check", "web", "region", "r1"}, 0.02},
		{"vigil_location_report_latency_seconds", []string{"check", "web", "region", "r2"}, 0.03},
		{"vigil_location_checks_without_series", nil, 0},
	} {
		if got, _ := gathered(t, mfs, c.name, c.labels...); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A checker that is gone from the table is gone from the series.
	e.RemoveChecker("c2")
	e.Advance(now)
	mfs, _ = reg.Gather()
	if _, series := gathered(t, mfs, "vigil_location_checker_last_heard_seconds"); series != 3 {
		t.Errorf("last-heard series after c2 left: %d, want 3", series)
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

// TestLocationMetricsBounded: a location holding more checks than maxCheckSeries exports
// series only for the checks not healthy, and counts the rest.
func TestLocationMetricsBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	n := &Node{}
	n.loc.engine = verdict.New()
	if _, err := newLocationMetrics(reg, n); err != nil {
		t.Fatal(err)
	}
	const checks = maxCheckSeries + 500
	doc := &config.Document{}
	for i := range checks {
		doc.Checks = append(doc.Checks, config.Check{ID: fmt.Sprintf("k%d", i), Protocol: config.ProtocolTCP, MinReporters: 1, HealthyThreshold: 0.18})
	}
	now := time.Now()
	e := n.loc.engine
	e.Configure(doc)
	e.Progress("c1", "r1", now)
	for i := range checks {
		e.SetReport(fmt.Sprintf("k%d", i), "c1", gossip.Entry{Status: healthyIf(i >= 7)})
	}
	e.Advance(now)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if _, series := gathered(t, mfs, "vigil_location_verdict"); series != 7*3 {
		t.Errorf("verdict series %d, want 21 (the 7 unhealthy checks × 3 states)", series)
	}
	if got, _ := gathered(t, mfs, "vigil_location_checks_without_series"); got != checks-7 {
		t.Errorf("checks without series %v, want %d", got, checks-7)
	}
}

// healthyIf is the status of a report that says healthy when ok.
func healthyIf(ok bool) checker.Status {
	if ok {
		return checker.StatusHealthy
	}
	return checker.StatusUnhealthy
}
