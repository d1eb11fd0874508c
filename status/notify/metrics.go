package notify

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/control/state"
)

type metrics struct {
	deliveries *prometheus.CounterVec
	decisions  *prometheus.CounterVec
}

// newMetrics registers the Runner's metrics with reg (none when nil).
func newMetrics(reg prometheus.Registerer, store Store) (*metrics, error) {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vigil_notify_deliveries_total",
			Help: "Notification delivery attempts by this voter, by receiver and outcome (delivered, failed, given_up)."}, []string{"receiver", "outcome"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vigil_notify_decisions_total",
			Help: "Alert changes this voter decided as leader, by change (fire, repeat, resolve)."}, []string{"change"}),
	}
	if reg == nil {
		return m, nil
	}
	outbox := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vigil_notify_outbox_notifications",
		Help: "Notifications waiting in the replicated outbox for at least one receiver."},
		func() float64 { out, _ := store.State().Outbox(); return float64(len(out)) })
	dropped := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vigil_notify_outbox_dropped_total",
		Help: "Notifications dropped from a full replicated outbox."},
		func() float64 { _, d := store.State().Outbox(); return float64(d) })
	firing := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vigil_notify_alerts_firing",
		Help: "Alerts that fire, in the replicated state."},
		func() float64 { return float64(len(store.State().Alerts())) })
	for _, c := range []prometheus.Collector{m.deliveries, m.decisions, outbox, dropped, firing} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("notify: metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) outcome(receiver, outcome string) {
	m.deliveries.WithLabelValues(receiver, outcome).Inc()
}

func (m *metrics) decided(c *state.NotifyCommand) {
	m.decisions.WithLabelValues("fire").Add(float64(len(c.Fire)))
	m.decisions.WithLabelValues("repeat").Add(float64(len(c.Repeat)))
	m.decisions.WithLabelValues("resolve").Add(float64(len(c.Resolve)))
}
