package location

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
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
