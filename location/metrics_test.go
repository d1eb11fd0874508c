package location

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/vigil-dns/vigil/dnssec"
)

// TestMetrics registers the metrics in a fresh registry, checks the label values stay
// bounded, and lints every name.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{Addr: "127.0.0.1:0", Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(t, testZones(), testShards()))
	s.SetVerdicts(map[string]bool{"p": false, "s": false, "m2": false})
	for _, q := range []*dns.Msg{
		query("www.example.test.", dns.TypeA, 0),
		query("nope.example.test.", dns.TypeA, 0),
		query("www.example.org.", dns.TypeA, 0),
		query("www.example.other.", dns.TypeA, 0),
		query("www.example.test.", 65000, 0),
		query("fo.example.test.", dns.TypeA, 0),
	} {
		s.Respond(packed(t, q), Request{NameServer: -1})
	}
	s.Respond([]byte{1, 2, 3}, Request{NameServer: 3})

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"A", "NOERROR", "example.test."}, 2},
		{[]string{"A", "NXDOMAIN", "example.test."}, 1},
		{[]string{"A", "REFUSED", noZone}, 2},
		{[]string{otherLabel, "NOERROR", "example.test."}, 1},
	} {
		if got := testutil.ToFloat64(s.metrics.queries.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("queries %v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("ns-3", dropMalformed)); got != 1 {
		t.Errorf("dropped malformed on ns-3 = %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.metrics.lastResorts.WithLabelValues("fo.example.test./A")); got != 1 {
		t.Errorf("last resort of fo = %v, want 1", got)
	}
	// fo is in last resort (nothing withheld), mv withholds one record.
	if got := testutil.ToFloat64(s.metrics.withheld.WithLabelValues("example.test.")); got != 1 {
		t.Errorf("withheld = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(s.metrics.duration); got != 1 {
		t.Errorf("duration histogram series %d", got)
	}

	// A signed zone's signatures: made, from the cache, refused; and the cache's size.
	s.SetSigners(map[string]*dnssec.Signer{"example.test.": testSigner(t, dnssec.SchemeCombined)})
	for range 2 {
		s.Respond(packed(t, doQuery("www.example.test.", dns.TypeA, 1232)), Request{NameServer: -1})
	}
	if n := testutil.CollectAndCount(newSignerCollector(s)); n != 5 {
		t.Errorf("signer series: %d, want 5", n)
	}
	if n := testutil.CollectAndCount(newSignerCollector(s), "vigil_location_dnssec_sign_budget_per_second"); n != 1 {
		t.Errorf("sign budget series: %d, want 1", n)
	}
	if err := testutil.CollectAndCompare(newSignerCollector(s), strings.NewReader(`
# HELP vigil_location_dnssec_signatures_total Signatures of answers of signed zones, by zone and source (signed: made for the answer; cache: reused; refused: not made, the signing budget being spent).
# TYPE vigil_location_dnssec_signatures_total counter
vigil_location_dnssec_signatures_total{source="cache",zone="example.test."} 1
vigil_location_dnssec_signatures_total{source="refused",zone="example.test."} 0
vigil_location_dnssec_signatures_total{source="signed",zone="example.test."} 1
`), "vigil_location_dnssec_signatures_total"); err != nil {
		t.Error(err)
	}

	// A zone that is no longer hosted leaves no series behind.
	s.SetSnapshot(mustSnapshot(t, testZones()[1:], testShards()))
	if n := testutil.CollectAndCount(s.metrics.withheld); n != 1 {
		t.Errorf("withheld series after removing example.test: %d, want 1", n)
	}
	if n := testutil.CollectAndCount(s.metrics.lastResorts); n != 0 {
		t.Errorf("last resort series after removing example.test: %d, want 0", n)
	}

	problems, err := promlint.NewWithMetricFamilies(mustGather(t, reg)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	families := mustGather(t, reg)
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "vigil_location_") {
			t.Errorf("metric %s lacks the vigil_location_ prefix", f.GetName())
		}
	}
	if len(families) < 5 {
		t.Errorf("%d metric families gathered", len(families))
	}
}

func mustGather(t *testing.T, reg *prometheus.Registry) []*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}
