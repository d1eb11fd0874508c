package externaldns

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The reasons a request is refused (label reason of vigil_externaldns_requests_refused_total).
const (
	reasonHost      = "host"       // a Host that is not loopback, localhost or allowed
	reasonBrowser   = "browser"    // an Origin or Sec-Fetch-Site header
	reasonMediaType = "media_type" // a POST without the webhook media type
)

// The reasons a change is refused (label reason of vigil_externaldns_changes_refused_total).
const (
	reasonNotOwned = "not_owned" // the record set exists without this provider's mark
	reasonApexNS   = "apex_ns"   // the NS record set of a zone's apex
)

// The operations of a change (label op).
const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
)

// metrics counts what the provider refused and what it wrote.
type metrics struct {
	requestsRefused *prometheus.CounterVec
	changesRefused  *prometheus.CounterVec
	changesApplied  *prometheus.CounterVec
}

// newMetrics registers the provider's counters with reg.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requestsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_externaldns_requests_refused_total",
			Help: "Webhook requests refused before they were read: reason host (not loopback, localhost or -allowed-hosts), browser (an Origin or Sec-Fetch-Site header) or media_type (a POST without the webhook media type).",
		}, []string{"reason"}),
		changesRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_externaldns_changes_refused_total",
			Help: "Record set changes the provider did not make: reason not_owned (the record set exists without this provider's managed_by) or apex_ns (a zone's own NS record set).",
		}, []string{"op", "reason"}),
		changesApplied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_externaldns_changes_applied_total",
			Help: "Record set changes the provider wrote to the control plane: op create, update or delete.",
		}, []string{"op"}),
	}
	for _, c := range []prometheus.Collector{m.requestsRefused, m.changesRefused, m.changesApplied} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("externaldns: register metrics: %w", err)
		}
	}
	return m, nil
}
