package routing_test

import (
	"fmt"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/routing"
)

// A failover pair whose primary and secondary both fail their checks answers the primary, in
// last resort, and the explanation says so.
func ExampleExplain() {
	rs := &config.RecordSet{Name: "www.demo.vigil.test.", Type: config.TypeA, Policy: config.PolicyFailover,
		Records: []config.Record{
			{Value: "192.0.2.10", HealthCheck: "sao-paulo", Role: config.RolePrimary},
			{Value: "198.51.100.10", HealthCheck: "ohio", Role: config.RoleSecondary},
		}}
	verdicts := map[string]bool{"sao-paulo": false, "ohio": true}
	health := func(check string) bool {
		healthy, known := verdicts[check]
		return healthy || !known // unknown is served as healthy
	}
	res, _ := routing.Explain(rs, health, 0)
	fmt.Println(res)
	verdicts["ohio"] = false
	res, _ = routing.Explain(rs, health, 0)
	fmt.Println(res)
	// Output:
	// failover secondary: 198.51.100.10 (primary unhealthy, secondary healthy)
	// failover last-resort: 192.0.2.10 (primary unhealthy, secondary unhealthy)
}

// The hot path writes the answer's record indices into a reused buffer and allocates nothing.
func ExampleSelect() {
	rs := &config.RecordSet{Name: "www.demo.vigil.test.", Type: config.TypeA, Policy: config.PolicyMultivalue,
		Records: []config.Record{
			{Value: "192.0.2.1", HealthCheck: "web-1"},
			{Value: "192.0.2.2", HealthCheck: "web-2"},
			{Value: "192.0.2.3", HealthCheck: "web-3"},
		}}
	allDown := func(string) bool { return false }
	buf := make([]int, 0, len(rs.Records))
	buf, rule, err := routing.Select(rs, allDown, 12345, buf)
	fmt.Println(len(buf), rule, rule.LastResort(), err)
	// Output:
	// 3 last-resort true <nil>
}
