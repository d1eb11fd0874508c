package routing

import (
	"fmt"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// benchCase is a record set and the verdicts a location holds for its checks.
type benchCase struct {
	name     string
	rs       *config.RecordSet
	verdicts map[string]bool
}

func benchCases() []benchCase {
	multi := func(n int) *config.RecordSet {
		rs := set(config.PolicyMultivalue)
		for i := range n {
			rs.Records = append(rs.Records, rec(fmt.Sprintf("10.0.0.%d", i+1), fmt.Sprintf("web-%d", i+1)))
		}
		return rs
	}
	allDown := func(rs *config.RecordSet) map[string]bool {
		m := map[string]bool{}
		for _, r := range rs.Records {
			m[r.HealthCheck] = false
		}
		return m
	}
	simple := set(config.PolicySimple, rec("192.0.2.1", ""), rec("192.0.2.2", ""), rec("192.0.2.3", ""), rec("192.0.2.4", ""))
	weightedSet := set(config.PolicyWeighted,
		weighted("192.0.2.1", "us-east", 70), weighted("192.0.2.2", "eu-west", 20),
		weighted("192.0.2.3", "ap-south", 10), weighted("203.0.113.99", "sorry", 0))
	failover := set(config.PolicyFailover,
		role("192.0.2.10", "sao-paulo", config.RolePrimary), role("198.51.100.10", "ohio", config.RoleSecondary))
	return []benchCase{
		{"simple-4", simple, nil},
		{"weighted-4", weightedSet, map[string]bool{"us-east": true, "eu-west": false}},
		{"weighted-4-last-resort", weightedSet, allDown(weightedSet)},
		{"multivalue-10", multi(10), map[string]bool{"web-3": false}},
		{"multivalue-10-last-resort", multi(10), allDown(multi(10))},
		{"failover-secondary", failover, map[string]bool{"sao-paulo": false}},
	}
}

// health serves verdicts from a map, unknown checks as healthy, as a location would.
func (c benchCase) health() Health {
	return func(id string) bool {
		ok, known := c.verdicts[id]
		return ok || !known
	}
}

// BenchmarkSelect is the hot path: indices into a reused buffer.
func BenchmarkSelect(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			h := c.health()
			buf := make([]int, 0, len(c.rs.Records))
			var rnd uint64
			b.ReportAllocs()
			for b.Loop() {
				rnd++
				var err error
				if buf, _, err = Select(c.rs, h, rnd, buf); err != nil || len(buf) == 0 {
					b.Fatal(buf, err)
				}
			}
		})
	}
}

// BenchmarkExplain is the explained form the status API uses, on the same cases.
func BenchmarkExplain(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			h := c.health()
			var rnd uint64
			b.ReportAllocs()
			for b.Loop() {
				rnd++
				if res, err := Explain(c.rs, h, rnd); err != nil || len(res.Answer) == 0 {
					b.Fatal(res, err)
				}
			}
		})
	}
}
