package checker

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the checker's Prometheus metrics. Their labels are closed sets (protocol,
// result, reason code, phase), never a check id: a checker with 100,000 checks keeps a few
// dozen series.
type metrics struct {
	probes        *prometheus.CounterVec   // protocol, result, reason
	phases        *prometheus.HistogramVec // phase
	phaseDNS      prometheus.Observer
	phaseConnect  prometheus.Observer
	phaseTLS      prometheus.Observer
	phaseFirst    prometheus.Observer
	phaseTotal    prometheus.Observer
	assigned      prometheus.Gauge
	inFlight      prometheus.Gauge
	lag           prometheus.Histogram
	skipped       prometheus.Counter
	withdrawn     *prometheus.CounterVec // reason
	selfHealthy   prometheus.Gauge
	concurrencyLm prometheus.Gauge
}

// newMetrics creates the metrics and registers them with reg (none when reg is nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	buckets := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	m := &metrics{
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_checker_probes_total",
			Help: "Probes finished, by protocol, result (healthy or unhealthy) and reason code.",
		}, []string{"protocol", "result", "reason"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_checker_probe_duration_seconds",
			Help:    "Probe duration by phase: dns, connect and tls are phase lengths; first_byte and total are measured from the start of the probe.",
			Buckets: buckets,
		}, []string{"phase"}),
		assigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_checker_checks_assigned",
			Help: "Checks currently assigned to this checker (canaries excluded).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_checker_probes_in_flight",
			Help: "Probes running now.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_checker_scheduler_lag_seconds",
			Help:    "How long after its due time a probe started.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_checker_probes_skipped_total",
			Help: "Probes not started because the check's previous probe was still in flight.",
		}),
		withdrawn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_checker_reports_withdrawn_total",
			Help: "Reports withdrawn, by reason (removed, check_changed, checker_isolated, checker_stopped).",
		}, []string{"reason"}),
		selfHealthy: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_checker_self_healthy",
			Help: "1 while this checker can reach its targets, 0 while it is isolated and withdraws its reports.",
		}),
		concurrencyLm: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_checker_concurrency_limit",
			Help: "The most probes this checker runs at once.",
		}),
	}
	m.phaseDNS = m.phases.WithLabelValues("dns")
	m.phaseConnect = m.phases.WithLabelValues("connect")
	m.phaseTLS = m.phases.WithLabelValues("tls")
	m.phaseFirst = m.phases.WithLabelValues("first_byte")
	m.phaseTotal = m.phases.WithLabelValues("total")
	m.selfHealthy.Set(1)
	if reg == nil {
		return m, nil
	}
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("checker: metrics already registered (one checker per registry): %w", err)
			}
			return nil, fmt.Errorf("checker: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.probes, m.phases, m.assigned, m.inFlight, m.lag, m.skipped,
		m.withdrawn, m.selfHealthy, m.concurrencyLm}
}

// observe records a finished probe.
func (m *metrics) observe(protocol string, r *Result) {
	result := "unhealthy"
	if r.Healthy {
		result = "healthy"
	}
	m.probes.WithLabelValues(protocol, result, string(r.Reason)).Inc()
	t := r.Timings
	if t.DNS > 0 {
		m.phaseDNS.Observe(t.DNS.Seconds())
	}
	if t.Connect > 0 {
		m.phaseConnect.Observe(t.Connect.Seconds())
	}
	if t.TLS > 0 {
		m.phaseTLS.Observe(t.TLS.Seconds())
	}
	if t.FirstByte > 0 {
		m.phaseFirst.Observe(t.FirstByte.Seconds())
	}
	m.phaseTotal.Observe(t.Total.Seconds())
}
