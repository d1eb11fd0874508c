package agent

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/location/verdict"
	"github.com/vigil-dns/vigil/quorum"
)

// maxCheckSeries bounds the checks a location exports series of its own for (verdict,
// changes, votes, latency): up to it, every check; beyond (a location holding more checks
// than a dashboard can show), only the checks not healthy, up to it. The totals by state
// (vigil_node_verdicts) cover every check.
const maxCheckSeries = 10000

// statsChunk is how many places of the engine's check table one scrape reads per hold of the
// location's lock, so that a scrape never holds up verdicts for long.
const statsChunk = 4096

// locationMetrics are a location's per-check verdicts and what it hears of the checkers (the
// dashboards and alert rules of deploy/ use these names). They hold nothing: a scrape reads
// them from the verdict engine, so series of removed checks and departed checkers are gone
// with them, and keeping them costs nothing between scrapes.
type locationMetrics struct {
	n         *Node
	verdicts  *prometheus.Desc
	changes   *prometheus.Desc
	lastHeard *prometheus.Desc
	votes     *prometheus.Desc
	latency   *prometheus.Desc
	fresh     *prometheus.Desc
	known     *prometheus.Desc
	expected  *prometheus.Desc
	omitted   *prometheus.Desc
}

func newLocationMetrics(reg prometheus.Registerer, n *Node) (*locationMetrics, error) {
	m := &locationMetrics{
		n: n,
		verdicts: prometheus.NewDesc("vigil_location_verdict",
			"1 for the state of this location's current verdict of each check (healthy, unhealthy or unknown).",
			[]string{"check", "state"}, nil),
		changes: prometheus.NewDesc("vigil_location_verdict_changes_total",
			"Changes of this location's verdicts, by check and the state changed to.",
			[]string{"check", "state"}, nil),
		lastHeard: prometheus.NewDesc("vigil_location_checker_last_heard_seconds",
			"Time since this location last heard each checker make progress (its freshness), by this location's clock.",
			[]string{"checker", "region"}, nil),
		votes: prometheus.NewDesc("vigil_location_votes",
			"Reports this location holds for each check, by the checker's region and their vote: healthy or unhealthy (fresh, counted), stale.",
			[]string{"check", "region", "vote"}, nil),
		latency: prometheus.NewDesc("vigil_location_report_latency_seconds",
			"The longest last-probe latency among the fresh reports of each check, by the checkers' region.",
			[]string{"check", "region"}, nil),
		fresh: prometheus.NewDesc("vigil_location_checkers_fresh",
			"Checkers this location heard make progress within the freshness window.", nil, nil),
		known: prometheus.NewDesc("vigil_location_checkers_known",
			"Checkers this location holds reports of, fresh or stale.", nil, nil),
		expected: prometheus.NewDesc("vigil_location_checkers_expected",
			"Checkers the assignment, as this location computes it, expects to report.", nil, nil),
		omitted: prometheus.NewDesc("vigil_location_checks_without_series",
			fmt.Sprintf("Checks with a verdict but no series of their own: beyond %d checks, only checks not healthy have them.", maxCheckSeries), nil, nil),
	}
	if reg != nil {
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("node: location metrics: %w", err)
		}
	}
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *locationMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.verdicts, m.changes, m.lastHeard, m.votes, m.latency, m.fresh, m.known, m.expected, m.omitted} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads the verdict engine, a chunk of checks at a
// time, and the assignment.
func (m *locationMetrics) Collect(ch chan<- prometheus.Metric) {
	n, l := m.n, &m.n.loc
	now := time.Now()
	l.mu.Lock()
	_, decided := l.engine.Len()
	fresh, known := 0, 0
	l.engine.Checkers(func(c quorum.HeardChecker) {
		if c.Reports == 0 {
			return
		}
		known++
		if c.Fresh {
			fresh++
		}
		if !c.LastProgress.IsZero() {
			ch <- prometheus.MustNewConstMetric(m.lastHeard, prometheus.GaugeValue, now.Sub(c.LastProgress).Seconds(), c.ID, regionLabel(c.Region))
		}
	})
	l.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(m.fresh, prometheus.GaugeValue, float64(fresh))
	ch <- prometheus.MustNewConstMetric(m.known, prometheus.GaugeValue, float64(known))

	all := decided <= maxCheckSeries
	exported := 0
	for from := 0; ; {
		l.mu.Lock()
		from = l.engine.EachStats(from, statsChunk, func(id string, s verdict.CheckStats, reports []verdict.ReportStats) {
			if exported >= maxCheckSeries || !all && s.State == quorum.StateHealthy {
				return
			}
			exported++
			m.collectCheck(ch, id, s, reports)
		})
		l.mu.Unlock()
		if from == 0 {
			break
		}
	}
	ch <- prometheus.MustNewConstMetric(m.omitted, prometheus.GaugeValue, float64(max(decided-exported, 0)))

	expected := 0
	n.mu.Lock()
	if plan := n.asg.Plan(); plan != nil {
		expected = plan.Assigned()
	}
	n.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(m.expected, prometheus.GaugeValue, float64(expected))
}

// collectCheck sends one check's series.
func (m *locationMetrics) collectCheck(ch chan<- prometheus.Metric, id string, s verdict.CheckStats, reports []verdict.ReportStats) {
	for _, st := range []quorum.State{quorum.StateUnknown, quorum.StateHealthy, quorum.StateUnhealthy} {
		v := 0.0
		if s.State == st {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.verdicts, prometheus.GaugeValue, v, id, st.String())
		if c := s.Changes[st]; c > 0 {
			ch <- prometheus.MustNewConstMetric(m.changes, prometheus.CounterValue, float64(c), id, st.String())
		}
	}
	type key struct{ region, vote string }
	var votes map[key]int
	var latency map[string]float64
	for _, r := range reports {
		region := regionLabel(r.Region)
		vote := "stale"
		if r.Fresh {
			vote = r.Status.String() // healthy, unhealthy or unknown (not decided yet)
			if latency == nil {
				latency = map[string]float64{}
			}
			latency[region] = max(latency[region], r.Latency.Seconds())
		}
		if votes == nil {
			votes = map[key]int{}
		}
		votes[key{region, vote}]++
	}
	for k, c := range votes {
		ch <- prometheus.MustNewConstMetric(m.votes, prometheus.GaugeValue, float64(c), id, k.region, k.vote)
	}
	for region, v := range latency {
		ch <- prometheus.MustNewConstMetric(m.latency, prometheus.GaugeValue, v, id, region)
	}
}

// regionLabel is a checker's region as a label value.
func regionLabel(region string) string {
	if region == "" {
		return "unknown"
	}
	return region
}
