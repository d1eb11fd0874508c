package node

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/quorum"
)

// metrics are the node's own: the location's evaluations and verdicts, and readiness.
type metrics struct {
	evaluations prometheus.Counter
	evalSeconds prometheus.Histogram
	verdicts    *prometheus.GaugeVec
	configIndex prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		evaluations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_node_evaluations_total",
			Help: "Evaluations of every check's verdict by this location.",
		}),
		evalSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_node_evaluation_duration_seconds",
			Help:    "Time one evaluation of every check's verdict took.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8),
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
	for _, c := range []prometheus.Collector{m.evaluations, m.evalSeconds, m.verdicts, m.configIndex} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("node: metrics: %w", err)
		}
	}
	for _, s := range []quorum.State{quorum.StateHealthy, quorum.StateUnhealthy, quorum.StateUnknown} {
		m.verdicts.WithLabelValues(s.String())
	}
	return m, nil
}

// observe records one evaluation's verdicts.
func (m *metrics) observe(verdicts map[string]quorum.Verdict, seconds float64) {
	var counts [3]int
	for _, v := range verdicts {
		if int(v.State) < len(counts) {
			counts[v.State]++
		}
	}
	for s, c := range counts {
		m.verdicts.WithLabelValues(quorum.State(s).String()).Set(float64(c))
	}
	m.evaluations.Inc()
	m.evalSeconds.Observe(seconds)
}
