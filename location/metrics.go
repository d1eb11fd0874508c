package location

import (
	"strconv"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// The reasons a query gets no response.
const (
	dropMalformed = "malformed" // not a DNS query this server can read or answer
	dropBudget    = "budget"    // the listener's query budget is spent
	dropRRL       = "rrl"       // response rate limiting dropped it
)

// noZone is the zone label of queries outside every hosted zone (and of malformed ones).
const noZone = "none"

// otherLabel collapses label values outside the known set, so that label values stay bounded.
const otherLabel = "other"

// metrics are the location's Prometheus metrics.
type metrics struct {
	queries     *prometheus.CounterVec
	dropped     *prometheus.CounterVec
	slipped     prometheus.Counter
	duration    prometheus.Histogram
	lastResorts *prometheus.CounterVec
	withheld    *prometheus.GaugeVec
}

// newMetrics creates the metrics and registers them on reg; a nil reg registers nothing.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_queries_total",
			Help: "DNS queries answered, by query type, response code and hosted zone (\"none\" outside every hosted zone).",
		}, []string{"qtype", "rcode", "zone"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_queries_dropped_total",
			Help: "DNS queries that got no response, by listener (main or ns-<index>) and reason (malformed, budget, rrl).",
		}, []string{"listener", "reason"}),
		slipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_location_rrl_slipped_total",
			Help: "Rate-limited queries answered with an empty truncated response (slip) instead of being dropped.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_location_answer_duration_seconds",
			Help:    "Time to answer one DNS query, from its bytes to the response's bytes.",
			Buckets: []float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2},
		}),
		lastResorts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_last_resort_answers_total",
			Help: "Answers given in last resort (no record healthy, all answered), by record set (<owner>/<type>).",
		}, []string{"record_set"}),
		withheld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_location_withheld_records",
			Help: "Records currently withheld from answers because their health check is unhealthy, by zone.",
		}, []string{"zone"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.queries, m.dropped, m.slipped, m.duration, m.lastResorts, m.withheld} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe counts one query's outcome on listener.
func (m *metrics) observe(listener string, oc *outcome, took time.Duration) {
	if oc.drop != "" {
		m.dropped.WithLabelValues(listener, oc.drop).Inc()
		return
	}
	if oc.slip {
		m.slipped.Inc()
	}
	zone := oc.zone
	if zone == "" {
		zone = noZone
	}
	m.queries.WithLabelValues(qtypeLabel(oc.qtype), rcodeLabel(oc.rcode), zone).Inc()
	m.duration.Observe(took.Seconds())
}

// lastResort counts one answer in last resort.
func (m *metrics) lastResort(label string) { m.lastResorts.WithLabelValues(label).Inc() }

// qtypeLabel names a query type for the metrics: the common ones by name, the rest "other".
func qtypeLabel(t uint16) string {
	switch t {
	case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT, dns.TypeMX, dns.TypeNS, dns.TypeSOA,
		dns.TypeANY, dns.TypePTR, dns.TypeSRV, dns.TypeCAA, dns.TypeHTTPS, dns.TypeSVCB, dns.TypeDS,
		dns.TypeDNSKEY, dns.TypeAXFR, dns.TypeIXFR:
		return dns.TypeToString[t]
	case 0:
		return "none"
	}
	return otherLabel
}

// rcodeLabel names a response code for the metrics.
func rcodeLabel(rc int) string {
	switch rc {
	case dns.RcodeSuccess, dns.RcodeFormatError, dns.RcodeServerFailure, dns.RcodeNameError,
		dns.RcodeNotImplemented, dns.RcodeRefused, dns.RcodeBadVers:
		return dns.RcodeToString[rc]
	}
	return otherLabel
}

// listenerLabel names a listener: "main", or "ns-<index>" for a virtual name server.
func listenerLabel(index int) string {
	if index < 0 {
		return "main"
	}
	return "ns-" + strconv.Itoa(index)
}
