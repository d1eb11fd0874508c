package verify

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of asking one name server of a location, the outcome label of
// vigil_answer_checks_total.
const (
	// OutcomeAgree: the answer is one the location's verdicts give.
	OutcomeAgree = "agree"
	// OutcomeDisagree: the answer is not.
	OutcomeDisagree = "disagree"
	// OutcomeUnconfirmed: the answer disagreed with a digest made before it was asked for,
	// so the location's verdicts may have changed in between; not counted as a disagreement.
	OutcomeUnconfirmed = "unconfirmed"
	// OutcomeNoAnswer: no answer within the timeout, or an error code.
	OutcomeNoAnswer = "no_answer"
	// OutcomeNoVerdicts: the location's digest could not be read, so the answer was not judged.
	OutcomeNoVerdicts = "no_verdicts"
)

type metrics struct {
	checks      *prometheus.CounterVec
	convergence prometheus.Histogram
	pending     prometheus.Gauge
	dropped     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_answer_checks_total",
			Help: "Answers of locations' name servers this checker verified against the locations' own verdicts, by location and outcome (agree, disagree, unconfirmed, no_answer, no_verdicts).",
		}, []string{"location", "outcome"}),
		convergence: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_answer_convergence_seconds",
			Help:    "Time from a record set's first verdict change at any location to every location answering accordingly, as this checker measured it (failover time).",
			Buckets: []float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144},
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_answer_convergences_pending",
			Help: "Record sets whose verdicts changed and whose locations do not all answer accordingly yet (or still settle).",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_answer_convergences_dropped_total",
			Help: "Verdict changes whose locations did not all answer accordingly within the verifier's bound, dropped unmeasured.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.checks, m.convergence, m.pending, m.dropped} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("verify: metrics: %w", err)
		}
	}
	return m, nil
}
