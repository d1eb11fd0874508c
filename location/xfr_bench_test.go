package location

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// BenchmarkTransferVersion measures what a change costs a location that transfers a zone of
// 3,000 record sets (a third failover sets with health checks): the zone's image built again
// and compared with the last one, as the transfer loop does on every change of verdicts.
func BenchmarkTransferVersion(b *testing.B) {
	z := config.DefaultZone()
	z.Name = "bench.test."
	z.NameServers = []string{"ns1.bench.test."}
	for i := range 3000 {
		rs := config.RecordSet{Name: fmt.Sprintf("host-%d", i), Type: config.TypeA,
			Records: []config.Record{{Value: fmt.Sprintf("192.0.%d.%d", i/250, i%250+1)}}}
		if i%3 == 0 {
			rs.Policy = config.PolicyFailover
			rs.Records = []config.Record{{Value: "192.0.2.1", HealthCheck: fmt.Sprintf("c%d", i), Role: config.RolePrimary},
				{Value: "198.51.100.1", Role: config.RoleSecondary}}
		}
		z.RecordSets = append(z.RecordSets, rs)
	}
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(b, []config.Zone{z}, nil))
	zone := s.Snapshot().zones["bench.test."]
	now := time.Now()
	prev, _, err := s.xfr.version(zone, nil, s.verdicts.Load(), now)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.SetVerdicts(map[string]bool{fmt.Sprintf("c%d", (i%1000)*3): false})
		v, changed, err := s.xfr.version(zone, prev, s.verdicts.Load(), now)
		if err != nil || !changed {
			b.Fatalf("version: changed %v, %v", changed, err)
		}
		prev = v
	}
}
