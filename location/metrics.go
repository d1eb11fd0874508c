package location

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// The reasons a query gets no response.
const (
	dropMalformed = "malformed" // not a DNS query this server can read or answer
	dropBudget    = "budget"    // the listener's query budget is spent
	dropRRL       = "rrl"       // response rate limiting dropped it
	dropTCPConns  = "tcp_conns" // a TCP connection over the listener's limit, closed at once
	// dropTCPClient is a TCP connection over the limit of its client's network (/24 or /56),
	// closed at once.
	dropTCPClient = "tcp_conns_per_client"
	// dropSignBudget is a query of a signed zone whose answer needs a new signature while
	// the location's signing budget (dnssec.Budget) is spent (dnssec.go).
	dropSignBudget = "sign_budget"
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
	zoneFailed  *prometheus.GaugeVec
	// unsigned is 1 for each zone the control plane signs that this location cannot.
	unsigned *prometheus.GaugeVec
	// signFailures counts record sets left unsigned because signing failed (dnssec.go).
	signFailures prometheus.Counter
	// noZone caches the counters of queries outside every hosted zone.
	noZone counterCache
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
			Help: "DNS queries that got no response, by listener (main or ns-<index>) and reason (malformed, budget, rrl, tcp_conns, tcp_conns_per_client, sign_budget).",
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
		zoneFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_location_zone_install_failed",
			Help: "1 for each zone of the configuration this location could not install, by zone and what it serves instead (previous: the zone's last version that compiled; none: nothing, REFUSED). The other zones are installed.",
		}, []string{"zone", "served"}),
		unsigned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_location_dnssec_zone_unsigned",
			Help: "1 for each zone the control plane signs that this location answers unsigned, because it cannot sign it (no DNSSEC secret, or one that does not open the zone's keys): validating resolvers that trust the zone's DS get SERVFAIL from it.",
		}, []string{"zone"}),
		signFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_location_dnssec_sign_failures_total",
			Help: "Record sets of signed zones answered without their signature because signing failed.",
		}),
	}
	m.noZone = counterCache{m: m, zone: noZone}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.queries, m.dropped, m.slipped, m.duration, m.lastResorts, m.withheld, m.zoneFailed, m.unsigned, m.signFailures} {
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
	cache := &m.noZone
	if oc.zone != nil {
		cache = oc.zone.counters.Load()
		if cache == nil || cache.m != m {
			cache = &counterCache{m: m, zone: oc.zone.name}
			oc.zone.counters.Store(cache)
		}
	}
	cache.counter(oc.qtype, oc.rcode).Inc()
	m.duration.Observe(took.Seconds())
}

// counterCache holds the query counters of one zone by query type and response code, so that
// counting a query costs no label hashing. A snapshot's zone holds one for the server that
// answers from it.
type counterCache struct {
	m    *metrics
	zone string
	c    [qtypeSlots][rcodeSlots]atomic.Pointer[counterRef]
}

// counterRef boxes a counter for an atomic pointer.
type counterRef struct{ prometheus.Counter }

// counter returns the counter of qtype and rcode in the cache's zone.
func (cc *counterCache) counter(qtype uint16, rcode int) prometheus.Counter {
	p := &cc.c[qtypeSlot(qtype)][rcodeSlot(rcode)]
	if ref := p.Load(); ref != nil {
		return ref.Counter
	}
	ref := &counterRef{cc.m.queries.WithLabelValues(qtypeLabel(qtype), rcodeLabel(rcode), cc.zone)}
	p.Store(ref)
	return ref.Counter
}

// lastResort counts one answer in last resort.
func (m *metrics) lastResort(label string) { m.lastResorts.WithLabelValues(label).Inc() }

// The number of label values of qtype and rcode, each known value and "other" (and "none",
// for queries without a question).
const (
	qtypeSlots = 19
	rcodeSlots = 8
)

// qtypeSlot numbers the label value of a query type, from 0 to qtypeSlots-1.
func qtypeSlot(t uint16) int {
	switch t {
	case dns.TypeA:
		return 1
	case dns.TypeAAAA:
		return 2
	case dns.TypeCNAME:
		return 3
	case dns.TypeTXT:
		return 4
	case dns.TypeMX:
		return 5
	case dns.TypeNS:
		return 6
	case dns.TypeSOA:
		return 7
	case dns.TypeANY:
		return 8
	case dns.TypePTR:
		return 9
	case dns.TypeSRV:
		return 10
	case dns.TypeCAA:
		return 11
	case dns.TypeHTTPS:
		return 12
	case dns.TypeSVCB:
		return 13
	case dns.TypeDS:
		return 14
	case dns.TypeDNSKEY:
		return 15
	case dns.TypeAXFR:
		return 16
	case dns.TypeIXFR:
		return 17
	case 0:
		return 18
	}
	return 0
}

// qtypeLabel names a query type for the metrics: the common ones by name, the rest "other".
func qtypeLabel(t uint16) string {
	switch qtypeSlot(t) {
	case 0:
		return otherLabel
	case 18:
		return "none"
	}
	return dns.TypeToString[t]
}

// rcodeSlot numbers the label value of a response code, from 0 to rcodeSlots-1.
func rcodeSlot(rc int) int {
	switch rc {
	case dns.RcodeSuccess, dns.RcodeFormatError, dns.RcodeServerFailure, dns.RcodeNameError,
		dns.RcodeNotImplemented, dns.RcodeRefused:
		return rc + 1
	case dns.RcodeBadVers:
		return 7
	}
	return 0
}

// rcodeLabel names a response code for the metrics.
func rcodeLabel(rc int) string {
	if rcodeSlot(rc) == 0 {
		return otherLabel
	}
	return dns.RcodeToString[rc]
}

// listenerLabel names a listener: "main", or "ns-<index>" for a virtual name server.
func listenerLabel(index int) string {
	if index < 0 {
		return "main"
	}
	return "ns-" + strconv.Itoa(index)
}
