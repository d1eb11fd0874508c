package location

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
)

// BenchmarkRespond measures the in-process query path one UDP worker runs, from the query's
// bytes to the response's bytes, metrics included: a plain record set against health-aware
// ones, in the same run. Verdicts hold 10,000 checks, as a location's would.
func BenchmarkRespond(b *testing.B) { benchmarkAnswer(b, false) }

// BenchmarkAnswer is BenchmarkRespond through the answer cache, as a UDP worker answers: the
// questions asked again are served from the cache, but those chosen at random per query
// (weighted, multivalue), which take the full path.
func BenchmarkAnswer(b *testing.B) { benchmarkAnswer(b, true) }

func benchmarkAnswer(b *testing.B, cached bool) {
	s, err := New(Config{Addr: "127.0.0.1:0", Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(b, testZones(), testShards()))
	v := make(map[string]bool, 10000)
	for i := range 10000 {
		v[fmt.Sprintf("check-%d", i)] = i%10 != 0
	}
	v["w1"], v["m2"], v["p"] = false, false, false
	s.SetVerdicts(v)
	for _, c := range []struct {
		name  string
		qname string
		qtype uint16
	}{
		{"plain", "www.example.test.", dns.TypeA},
		{"health-aware/weighted", "wt.example.test.", dns.TypeA},
		{"health-aware/failover", "fo.example.test.", dns.TypeA},
		{"health-aware/multivalue", "mv.example.test.", dns.TypeA},
		{"nxdomain", "nope.example.test.", dns.TypeA},
		{"cname-chain", "chain1.example.test.", dns.TypeA},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := packed(b, query(c.qname, c.qtype, 1232))
			scr := newScratch()
			req := Request{NameServer: -1}
			b.ReportAllocs()
			for b.Loop() {
				var out []byte
				var oc outcome
				if cached {
					out, oc = s.answer(scr, q, req)
				} else {
					out, oc = s.respond(scr, q, req)
				}
				if out == nil || oc.rcode > dns.RcodeNameError {
					b.Fatalf("no answer: %+v", oc)
				}
				s.metrics.observe("main", &oc, 0)
			}
		})
	}
}

// bigZone returns a zone of n record sets, each a multivalue set of three A records with a
// health check apiece, as a health-checked zone at scale would be.
func bigZone(n int) config.Zone {
	z := config.DefaultZone()
	z.Name = "big.test."
	z.NameServers = []string{"ns1.big.test.", "ns2.big.test."}
	for i := range n {
		z.RecordSets = append(z.RecordSets, config.RecordSet{
			Name: fmt.Sprintf("host-%d", i), Type: config.TypeA, Policy: config.PolicyMultivalue,
			Records: []config.Record{
				{Value: fmt.Sprintf("10.%d.%d.1", i>>8&255, i&255), HealthCheck: fmt.Sprintf("c-%d-a", i)},
				{Value: fmt.Sprintf("10.%d.%d.2", i>>8&255, i&255), HealthCheck: fmt.Sprintf("c-%d-b", i)},
				{Value: fmt.Sprintf("10.%d.%d.3", i>>8&255, i&255), HealthCheck: fmt.Sprintf("c-%d-c", i)},
			},
		})
	}
	return z
}

// BenchmarkSnapshot10k compiles a zone of 10,000 health-checked record sets and reports the
// heap a compiled snapshot holds (bytes/snapshot, the configuration itself excluded) and the
// time to compile it.
func BenchmarkSnapshot10k(b *testing.B) {
	zones := []config.Zone{bigZone(10000)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep := mustSnapshot(b, zones, nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(keep.zones) != 1 {
		b.Fatal("no zone")
	}
	retained := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	runtime.KeepAlive(keep)
	b.ReportAllocs()
	for b.Loop() {
		mustSnapshot(b, zones, nil)
	}
	b.ReportMetric(retained, "bytes/snapshot")
	b.ReportMetric(retained/10000, "bytes/set")
}
