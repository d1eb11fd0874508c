package checker

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/vigil-dns/vigil/config"
)

// TestMetrics registers the checker's metrics in a fresh registry, runs probes so that every
// metric has a sample, and lints them.
func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) {})
	rec := newRecorder()
	c, err := New(Options{Name: "m", Logger: quiet(), Registerer: reg, Concurrency: 4,
		Prober: ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}}, OnReport: rec.onReport})
	if err != nil {
		t.Fatal(err)
	}
	good := fastCheck("good", ap)
	bad := fastCheck("bad", ap)
	bad.Path = "/missing"
	bad.ExpectStatus = []config.StatusRange{{Low: 500, High: 599}}
	if err := c.SetChecks([]config.Check{good, bad}); err != nil {
		t.Fatal(err)
	}
	runChecker(t, c)
	rec.waitFor(t, 5*time.Second, "both reported", func(rs []Report, _ []SelfHealth) bool {
		return len(latest(rs)) == 2
	})
	if err := c.SetChecks([]config.Check{good}); err != nil {
		t.Fatal(err)
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
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		if !strings.HasPrefix(mf.GetName(), "vigil_checker_") {
			t.Errorf("metric %s lacks the vigil_checker_ prefix", mf.GetName())
		}
	}
	for _, want := range []string{"vigil_checker_probes_total", "vigil_checker_probe_duration_seconds",
		"vigil_checker_checks_assigned", "vigil_checker_probes_in_flight", "vigil_checker_scheduler_lag_seconds",
		"vigil_checker_reports_withdrawn_total", "vigil_checker_self_healthy", "vigil_checker_concurrency_limit"} {
		if !names[want] {
			t.Errorf("metric %s not exported", want)
		}
	}
	if got := testutil.ToFloat64(c.metrics.assigned); got != 1 {
		t.Errorf("checks assigned = %v, want 1", got)
	}
	if got := testutil.ToFloat64(c.metrics.probes.WithLabelValues("http", "unhealthy", "status")); got < 1 {
		t.Errorf("unhealthy status probes = %v", got)
	}
	if got := testutil.ToFloat64(c.metrics.probes.WithLabelValues("http", "healthy", "ok")); got < 1 {
		t.Errorf("healthy probes = %v", got)
	}
	if got := testutil.ToFloat64(c.metrics.withdrawn.WithLabelValues(WithdrawRemoved)); got != 1 {
		t.Errorf("withdrawn(removed) = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(c.metrics.phases); n != 5 {
		t.Errorf("%d phase series, want 5", n)
	}

	// One registry, one checker: a second one says so instead of panicking.
	if _, err := New(Options{Registerer: reg}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("second checker on one registry: %v", err)
	}
}
