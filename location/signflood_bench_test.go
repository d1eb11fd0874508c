package location

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// BenchmarkRespondNewNames measures the whole in-process answer path (unpack, resolve, sign,
// pack) for random names that do not exist in example.test, with the DO bit (each needs its
// own black-lie NSEC signed) and without it: what a flood of new names costs a query. The
// signing budget is out of the way (the cost is measured, not the limit).
func BenchmarkRespondNewNames(b *testing.B) {
	for _, c := range []struct {
		name string
		do   bool
	}{{"unsigned", false}, {"signed", true}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(Config{Addr: "127.0.0.1:0", SignBudget: dnssec.NewBudget(1 << 30)})
			if err != nil {
				b.Fatal(err)
			}
			s.SetSnapshot(mustSnapshot(b, testZones(), testShards()))
			sealer, _ := dnssec.NewSealer([]byte("location-test-seal-secret-000000"))
			zk, _ := dnssec.InitialKeys("example.test.", dnssec.SchemeCombined, sealer, time.Now().Unix())
			sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{})
			if err != nil {
				b.Fatal(err)
			}
			s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
			const n = 1 << 16
			queries := make([][]byte, n)
			for i := range queries {
				m := query(fmt.Sprintf("r%08x.example.test.", i*2654435761), dns.TypeA, 0)
				m.SetEdns0(1232, c.do)
				queries[i], _ = m.Pack()
			}
			req := Request{NameServer: -1}
			b.ReportAllocs()
			cpu0 := processCPU(b)
			k := 0
			for i := 0; b.Loop(); i++ {
				if s.Respond(queries[i%n], req) == nil {
					b.Fatal("no response")
				}
				k++
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(max(k, 1)), "cpu-ns/op")
		})
	}
}

// BenchmarkDNSPerfNewNames runs dnsperf (10 clients, 100 queries outstanding) against a
// server on loopback asking for 200,000 random names that do not exist in example.test,
// without the DO bit and then with it (each signed answer needs a new black-lie signature),
// VIGIL_DNSPERF_ROUNDS times (default 3) for VIGIL_DNSPERF_SECONDS each (default 10). The
// server has the default signing budget (half of GOMAXPROCS cores at the measured signing
// cost). It reports both throughputs, their ratio, and the queries the budget dropped. Run
// it alone: go test -run '^$' -bench DNSPerfNewNames -benchtime 1x ./location/
func BenchmarkDNSPerfNewNames(b *testing.B) {
	seconds, rounds := 10, 3
	if v, err := strconv.Atoi(os.Getenv("VIGIL_DNSPERF_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	if v, err := strconv.Atoi(os.Getenv("VIGIL_DNSPERF_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	queries := make([]string, 200_000)
	for i := range queries {
		queries[i] = fmt.Sprintf("r%016x.example.test A", rand.Uint64())
	}
	reg := prometheus.NewRegistry()
	s := startServer(b, Config{Registerer: reg})
	s.SetSigners(map[string]*dnssec.Signer{"example.test.": testSigner(b, dnssec.SchemeCombined)})
	b.Logf("signing budget: %.0f new signatures a second (GOMAXPROCS %d)", s.budget.Rate(), runtime.GOMAXPROCS(0))
	dropped := func() float64 {
		var n float64
		fams, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != "vigil_location_queries_dropped_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "reason" && l.GetValue() == "sign_budget" {
						n += m.GetCounter().GetValue()
					}
				}
			}
		}
		return n
	}
	var ratios []float64
	for range b.N {
		for r := range rounds {
			c0 := processCPU(b)
			unsigned := runDNSPerf(b, s.Addr().String(), queries, seconds, false, 0, false)
			c1 := processCPU(b)
			d0 := dropped()
			signed := runDNSPerf(b, s.Addr().String(), queries, seconds, false, 0, true)
			c2 := processCPU(b)
			ratio := signed.qps / unsigned.qps
			ratios = append(ratios, ratio)
			// Queries answered per CPU-second of the server (this process), to compare with
			// other servers on a machine that dnsperf shares.
			perCPU := func(n int, ns int64) float64 { return float64(n) / (float64(max(ns, 1)) / 1e9) }
			b.Logf("round %d: unsigned %.0f qps (%d of %d completed, %.0f per server CPU-second), signed %.0f qps (%d of %d completed, %.0f per server CPU-second, %.0f dropped for the signing budget): %.1f%%",
				r+1, unsigned.qps, unsigned.completed, unsigned.sent, perCPU(unsigned.completed, c1-c0),
				signed.qps, signed.completed, signed.sent, perCPU(signed.completed, c2-c1), dropped()-d0, 100*ratio)
		}
	}
	b.ReportMetric(100*slices.Min(ratios), "min-signed-%")
	b.ReportMetric(100*slices.Max(ratios), "max-signed-%")
}

// BenchmarkRespondWildcardNames measures the in-process answer path for random names that a
// wildcard of example.test answers (a TXT record), unsigned and signed with each denial mode:
// with compact denial each expanded name is signed as its own; with denial nsec the answer
// carries the wildcard's cached signature and the chain's cached NSEC that covers the name.
// It reports the new signatures per query beside the CPU.
func BenchmarkRespondWildcardNames(b *testing.B) {
	for _, c := range []struct {
		name   string
		do     bool
		denial string
	}{{"unsigned", false, config.DenialCompact}, {"compact", true, config.DenialCompact}, {"nsec", true, config.DenialNSEC}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(Config{Addr: "127.0.0.1:0", SignBudget: dnssec.NewBudget(1 << 30)})
			if err != nil {
				b.Fatal(err)
			}
			zones := testZones()
			zones[0].DNSSEC = &config.DNSSEC{Enabled: true, Denial: c.denial}
			zones[0].RecordSets = append(zones[0].RecordSets,
				config.RecordSet{Name: "*.w", Type: config.TypeTXT, Records: []config.Record{{Value: `"wild"`}}})
			s.SetSnapshot(mustSnapshot(b, zones, testShards()))
			sealer, _ := dnssec.NewSealer([]byte("location-test-seal-secret-000000"))
			zk, _ := dnssec.InitialKeys("example.test.", dnssec.SchemeCombined, sealer, time.Now().Unix())
			sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{})
			if err != nil {
				b.Fatal(err)
			}
			s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
			const n = 1 << 16
			queries := make([][]byte, n)
			for i := range queries {
				m := query(fmt.Sprintf("r%08x.w.example.test.", i*2654435761), dns.TypeTXT, 0)
				m.SetEdns0(1232, c.do)
				queries[i], _ = m.Pack()
			}
			req := Request{NameServer: -1}
			b.ReportAllocs()
			signed0, _, _, _ := sg.Stats()
			cpu0 := processCPU(b)
			k := 0
			for i := 0; b.Loop(); i++ {
				if s.Respond(queries[i%n], req) == nil {
					b.Fatal("no response")
				}
				k++
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(max(k, 1)), "cpu-ns/op")
			signed, _, _, _ := sg.Stats()
			b.ReportMetric(float64(signed-signed0)/float64(max(k, 1)), "signatures/op")
		})
	}
}
