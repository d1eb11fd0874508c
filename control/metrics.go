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
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vigil_control_raft_log_binary",
			Help: "1 when this voter, as leader, writes commands in the binary encoding (every server of the configuration reads it).",
		}, func() float64 { return b2f(n.IsLeader() && n.binaryLog()) }),
	}
	cs = append(cs, n.batchSize, n.stages)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("control: register metrics: %w", err)
		}
	}
	return nil
}

// The stages of a write that vigil_control_write_stage_seconds times (writeStages).
const (
	stageValidate = "validate"  // the leader's check of the command against its state
	stageEncode   = "encode"    // the command's encoding for the log
	stageQueue    = "queue"     // from the commit call to its batch's raft.Apply (group commit)
	stageRaft     = "raft"      // raft.Apply to its answer: the leader's log write and sync, a majority's, the apply
	stageLogStore = "log_store" // one StoreLogs of the log store (write and sync), on every voter
	stageFSM      = "fsm_apply" // one ApplyBatch of the state machine (decode and apply), on every voter
)

// newWriteStages is the histogram of the time of each stage of a write on this voter.
func newWriteStages() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "vigil_control_write_stage_seconds",
		Help:    "Time of each stage of a write on this voter: validate, encode, queue (group commit), raft (Apply to its answer), log_store (a StoreLogs, with its sync) and fsm_apply (a batch of entries).",
		Buckets: prometheus.ExponentialBuckets(25e-6, 2, 14),
	}, []string{"stage"})
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
