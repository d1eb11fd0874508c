package tlsconf

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the counters of a node's TLS listeners and the expiry and reloads of its
// Store. A nil *Metrics counts nothing.
type Metrics struct {
	refusedTotal *prometheus.CounterVec
	failedTotal  *prometheus.CounterVec
}

// NewMetrics registers the metrics of store (nil for none) and of the listeners that will be
// given the returned Metrics with reg.
func NewMetrics(reg prometheus.Registerer, store *Store) (*Metrics, error) {
	m := &Metrics{
		refusedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_tls_connections_refused_total",
			Help: "Connections to a TLS listener closed at once because its handshakes in progress (in all or from the source's network, /24 IPv4 or /56 IPv6) were at their limit.",
		}, []string{"listener"}),
		failedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_tls_handshakes_failed_total",
			Help: "TLS handshakes on a listener that failed: no certificate, one of another CA, expired, without the role, plaintext, or too slow.",
		}, []string{"listener"}),
	}
	cs := []prometheus.Collector{m.refusedTotal, m.failedTotal}
	if store != nil {
		cs = append(cs, newStoreCollector(store))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) refused(listener string) {
	if m != nil {
		m.refusedTotal.WithLabelValues(listener).Inc()
	}
}

func (m *Metrics) failed(listener string) {
	if m != nil {
		m.failedTotal.WithLabelValues(listener).Inc()
	}
}

func newStoreCollector(s *Store) *storeCollector {
	return &storeCollector{s: s, expiry: prometheus.NewDesc("vigil_tls_certificate_expiry_timestamp_seconds",
		"When a certificate in use expires, as a Unix time: the node's own (certificate=\"node\") and the earliest of its CA file (certificate=\"ca\").",
		[]string{"certificate"}, nil),
		reloads: prometheus.NewDesc("vigil_tls_reloads_total",
			"Reloads of the certificate, key and CA files after one of them changed, by result (ok, or error: the pair in use stayed).",
			[]string{"result"}, nil)}
}

// storeCollector exports a Store's expiry and reloads; a scrape also looks at the files, so
// that a renewed certificate shows without a handshake.
type storeCollector struct {
	s               *Store
	expiry, reloads *prometheus.Desc
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.expiry
	ch <- c.reloads
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	cert, ca := c.s.Expiry()
	ch <- prometheus.MustNewConstMetric(c.expiry, prometheus.GaugeValue, float64(cert.Unix()), "node")
	ch <- prometheus.MustNewConstMetric(c.expiry, prometheus.GaugeValue, float64(ca.Unix()), "ca")
	c.s.mu.Lock()
	ok, failed := c.s.reloads.ok, c.s.reloads.failed
	c.s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(ok), "ok")
	ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(failed), "error")
}
