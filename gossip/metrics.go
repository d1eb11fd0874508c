package gossip

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a message is dropped, as the metrics label them.
const (
	reasonMalformed = "malformed"
	reasonOversized = "oversized"
	reasonVersion   = "unknown_version"
	reasonTableFull = "table_full"
	reasonQueueFull = "queue_full"
	reasonRole      = "not_for_role"
)

// metrics are one node's gossip metrics.
type metrics struct {
	received      *prometheus.CounterVec
	receivedV1    *prometheus.CounterVec
	dropped       *prometheus.CounterVec
	sentBytes     prometheus.Counter
	receivedBytes prometheus.Counter
	members       *prometheus.GaugeVec
	reports       prometheus.Gauge
	checkers      prometheus.Gauge
	repairs       prometheus.Counter
	rejoins       prometheus.Counter
	refused       *prometheus.CounterVec
	// membersRefused counts alive messages and joins refused for a node that cannot be one
	// (admission.go).
	membersRefused *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_gossip_messages_received_total",
			Help: "Gossip messages received, by kind.",
		}, []string{"kind"}),
		receivedV1: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_gossip_v1_messages_received_total",
			Help: "Row requests, rows and push/pull states received in wire version 1 (from nodes not yet upgraded), by kind.",
		}, []string{"kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_gossip_messages_dropped_total",
			Help: "Gossip messages dropped, by kind and reason.",
		}, []string{"kind", "reason"}),
		sentBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_gossip_sent_bytes_total",
			Help: "Bytes this node sent on its gossip transport, packets and streams.",
		}),
		receivedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_gossip_received_bytes_total",
			Help: "Bytes this node received on its gossip transport, packets and streams.",
		}),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_gossip_members",
			Help: "Live members of the pool, by region.",
		}, []string{"region"}),
		reports: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_gossip_table_reports",
			Help: "Reports held in this node's table.",
		}),
		checkers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_gossip_table_checkers",
			Help: "Checkers whose rows this node's table holds.",
		}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_gossip_row_repairs_total",
			Help: "Rows this node asked peers for because it missed changes.",
		}),
		rejoins: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_gossip_rejoins_total",
			Help: "Rejoin attempts of known peers that were not alive.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_gossip_inbound_refused_total",
			Help: "Inbound gossip streams and packets refused before memberlist read them, by transport (stream, packet) and reason (unauthenticated, oversized, streams_total, streams_per_source, buffered_bytes, read_timeout, queue_timeout).",
		}, []string{"transport", "reason"}),
		membersRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_gossip_members_refused_total",
			Help: "Announcements of members refused before memberlist stored them (alive messages, and joins whose state held such a member), by reason: name (empty, too long, not UTF-8, control characters), versions (protocol or delegate versions this build cannot speak with), meta (metadata that does not decode or names another node).",
		}, []string{"reason"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.received, m.receivedV1, m.dropped, m.sentBytes, m.receivedBytes,
		m.members, m.reports, m.checkers, m.repairs, m.rejoins, m.refused, m.membersRefused} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("gossip: register metrics: %w", err)
		}
	}
	return m, nil
}

// drop counts a dropped message.
func (m *metrics) drop(k kind, reason string) {
	m.dropped.WithLabelValues(k.String(), reason).Inc()
}

// dropReason names the reason of a decoding error.
func dropReason(err error) string {
	switch {
	case errors.Is(err, errOversized):
		return reasonOversized
	case errors.Is(err, errVersion):
		return reasonVersion
	}
	return reasonMalformed
}
