package node

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/shard"
)

// locationMetrics are a location's per-check verdicts and what it hears of the checkers (the
// dashboards and alert rules of deploy/ use these names). Series of removed checks and
// departed checkers are dropped at each evaluation, so they stay bounded by the
// configuration and the report table.
type locationMetrics struct {
	verdicts  *prometheus.GaugeVec
	changes   *prometheus.CounterVec
	lastHeard *prometheus.GaugeVec
	votes     *prometheus.GaugeVec
	latency   *prometheus.GaugeVec
	fresh     prometheus.Gauge
	known     prometheus.Gauge
	expected  prometheus.Gauge
}

func newLocationMetrics(reg prometheus.Registerer) (*locationMetrics, error) {
	m := &locationMetrics{
		verdicts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_location_verdict",
			Help: "1 for the state of this location's current verdict of each check (healthy, unhealthy or unknown).",
		}, []string{"check", "state"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_verdict_changes_total",
			Help: "Changes of this location's verdicts, by check and the state changed to.",
		}, []string{"check", "state"}),
		lastHeard: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_location_checker_last_heard_seconds",
			Help: "Time since this location last heard each checker make progress (its freshness), by this location's clock.",
		}, []string{"checker", "region"}),
		votes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_location_votes",
			Help: "Reports this location holds for each check, by the checker's region and their vote: healthy or unhealthy (fresh, counted), stale.",
		}, []string{"check", "region", "vote"}),
		latency: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_location_report_latency_seconds",
			Help: "The longest last-probe latency among the fresh reports of each check, by the checkers' region.",
		}, []string{"check", "region"}),
		fresh: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_location_checkers_fresh",
			Help: "Checkers this location heard make progress within the freshness window.",
		}),
		known: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_location_checkers_known",
			Help: "Checkers this location holds reports of, fresh or stale.",
		}),
		expected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_location_checkers_expected",
			Help: "Checkers the assignment, as this location computes it, expects to report.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.verdicts, m.changes, m.lastHeard, m.votes, m.latency, m.fresh, m.known, m.expected} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("node: location metrics: %w", err)
		}
	}
	return m, nil
}

// changed counts a change of check's verdict to state.
func (m *locationMetrics) changed(check string, state quorum.State) {
	m.changes.WithLabelValues(check, state.String()).Inc()
}

// observe sets the gauges from the verdicts and the reports held at now.
func (m *locationMetrics) observe(verdicts map[string]quorum.Verdict, reports []gossip.Report, plan *shard.Plan, doc *config.Document, now time.Time) {
	m.verdicts.Reset()
	for id, v := range verdicts {
		for _, s := range []quorum.State{quorum.StateUnknown, quorum.StateHealthy, quorum.StateUnhealthy} {
			val := 0.0
			if v.State == s {
				val = 1
			}
			m.verdicts.WithLabelValues(id, s.String()).Set(val)
		}
	}
	window := doc.Quorum.FreshnessWindow.Std()
	m.votes.Reset()
	m.latency.Reset()
	last := make(map[[2]string]time.Time)
	maxLatency := make(map[[2]string]float64)
	for _, r := range reports {
		region := r.Region
		if region == "" {
			region = "unknown"
		}
		vote := "stale"
		if r.Fresh(now, window) {
			vote = r.Entry.Status.String()
			k := [2]string{r.Check, region}
			maxLatency[k] = max(maxLatency[k], r.Entry.Latency.Seconds())
		}
		m.votes.WithLabelValues(r.Check, region, vote).Inc()
		k := [2]string{r.Checker, r.Region}
		if r.LastProgress.After(last[k]) || last[k].IsZero() {
			last[k] = r.LastProgress
		}
	}
	for k, v := range maxLatency {
		m.latency.WithLabelValues(k[0], k[1]).Set(v)
	}
	m.lastHeard.Reset()
	fresh := 0
	for k, t := range last {
		if t.IsZero() {
			continue
		}
		age := now.Sub(t)
		m.lastHeard.WithLabelValues(k[0], k[1]).Set(age.Seconds())
		if age <= window {
			fresh++
		}
	}
	m.fresh.Set(float64(fresh))
	m.known.Set(float64(len(last)))
	expected := map[string]bool{}
	if plan != nil {
		for _, id := range plan.Checks() {
			for _, r := range doc.Regions {
				for _, c := range plan.Shard(id, r) {
					expected[c] = true
				}
			}
		}
	}
	m.expected.Set(float64(len(expected)))
}
