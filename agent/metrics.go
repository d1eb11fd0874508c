package agent

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/quorum"
)

// metrics are the node's own: the location's evaluations and verdicts, and readiness.
type metrics struct {
	evaluations   prometheus.Counter
	checksDecided prometheus.Counter
	evalSeconds   prometheus.Histogram
	verdicts      *prometheus.GaugeVec
	configIndex   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		evaluations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_node_evaluations_total",
			Help: "Steps of this location's verdict engine that re-decided checks: each re-decides only the checks whose reports, checkers' freshness, hold or configuration changed.",
		}),
		checksDecided: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_node_checks_decided_total",
			Help: "Checks this location's verdict engine re-decided.",
		}),
		evalSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_node_evaluation_duration_seconds",
			Help:    "Time one step of the verdict engine took to re-decide the checks that changed and install their verdicts.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
		}),
		verdicts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_node_verdicts",
			Help: "Checks by the state of this location's verdict.",
		}, []string{"state"}),
		configIndex: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_node_config_index",
			Help: "Control-plane index of the configuration the data plane runs (0: none or static).",
		}),
	}
	for _, c := range []prometheus.Collector{m.evaluations, m.checksDecided, m.evalSeconds, m.verdicts, m.configIndex} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("node: metrics: %w", err)
		}
	}
	for _, s := range []quorum.State{quorum.StateHealthy, quorum.StateUnhealthy, quorum.StateUnknown} {
		m.verdicts.WithLabelValues(s.String())
	}
	return m, nil
}

// observe records steps of the verdict engine: the verdicts by state, how many steps
// re-decided anything and how many checks they re-decided, and the time the last one took.
func (m *metrics) observe(counts [3]int, steps, checks uint64, seconds float64) {
	for s, c := range counts {
		m.verdicts.WithLabelValues(quorum.State(s).String()).Set(float64(c))
	}
	m.evaluations.Add(float64(steps))
	m.checksDecided.Add(float64(checks))
	m.evalSeconds.Observe(seconds)
}
