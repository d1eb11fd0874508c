package location

import (
	"github.com/prometheus/client_golang/prometheus"
)

// signerCollector exports the signers' counts: signatures made and taken from the cache,
// refused by the signing budget, and the cache's size, by zone; and the signing budget's
// rate. A zone's counts start again when its keys change (a new signer).
type signerCollector struct {
	s                             *Server
	signatures, cacheSize, budget *prometheus.Desc
}

// newSignerCollector returns the collector of s's signers.
func newSignerCollector(s *Server) signerCollector {
	return signerCollector{s: s, signatures: prometheus.NewDesc("vigil_location_dnssec_signatures_total",
		"Signatures of answers of signed zones, by zone and source (signed: made for the answer; cache: reused; refused: not made, the signing budget being spent).",
		[]string{"zone", "source"}, nil),
		cacheSize: prometheus.NewDesc("vigil_location_dnssec_signature_cache_entries",
			"Signatures held in a signed zone's signature cache, by zone.", []string{"zone"}, nil),
		budget: prometheus.NewDesc("vigil_location_dnssec_sign_budget_per_second",
			"New signatures a second the location's signing budget allows across its signed zones (agent -dnssec-sign-budget, by default measured from the CPU at start); beyond it queries are dropped with reason sign_budget.", nil, nil)}
}

// Describe implements prometheus.Collector.
func (c signerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.signatures
	ch <- c.cacheSize
	ch <- c.budget
}

// Collect implements prometheus.Collector.
func (c signerCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, c.s.budget.Rate())
	for zone, sg := range c.s.Signers() {
		signed, cached, refused, size := sg.Stats()
		ch <- prometheus.MustNewConstMetric(c.signatures, prometheus.CounterValue, float64(signed), zone, "signed")
		ch <- prometheus.MustNewConstMetric(c.signatures, prometheus.CounterValue, float64(cached), zone, "cache")
		ch <- prometheus.MustNewConstMetric(c.signatures, prometheus.CounterValue, float64(refused), zone, "refused")
		ch <- prometheus.MustNewConstMetric(c.cacheSize, prometheus.GaugeValue, float64(size), zone)
	}
}
