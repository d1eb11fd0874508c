package control

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// registerNodeMetrics registers the gauges of one voter.
func registerNodeMetrics(reg prometheus.Registerer, n *Server) error {
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vigil_control_raft_leader",
			Help: "1 when this voter is the raft leader, 0 otherwise.",
		}, func() float64 { return b2f(n.IsLeader()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vigil_control_raft_commit_index",
			Help: "The highest raft log index this voter knows to be committed.",
		}, func() float64 { return float64(n.raft.CommitIndex()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vigil_control_raft_applied_index",
			Help: "The highest raft log index applied to this voter's state machine.",
		}, func() float64 { return float64(n.raft.AppliedIndex()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vigil_control_config_index",
			Help: "The raft index of the last command that changed the configuration.",
		}, func() float64 { return float64(n.fsm.State().Index) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vigil_control_ready",
			Help: "1 once this voter has replayed the raft log it had on disk at start.",
		}, func() float64 { return b2f(n.Ready()) }),
	}
	cs = append(cs, n.batchSize)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("control: register metrics: %w", err)
		}
	}
	return nil
}

// newBatchSize is the histogram of the writes committed in one raft entry.
func newBatchSize() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "vigil_control_commit_batch_writes",
		Help:    "Writes committed together in one raft entry by this voter as leader (group commit).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
	})
}

// apiMetrics counts the API's requests.
type apiMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newAPIMetrics(reg prometheus.Registerer) (*apiMetrics, error) {
	m := &apiMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_control_api_requests_total",
			Help: "Requests to the control-plane API, by route and HTTP status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_control_api_request_duration_seconds",
			Help:    "Time to answer a control-plane API request (blocking watches included), by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60},
		}, []string{"route"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("control: register API metrics: %w", err)
		}
	}
	return m, nil
}
