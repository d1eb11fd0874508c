package verify

import (
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/status"
)

// TestExpectWithOverrides: with a drain of the primary in force, a failover set is expected
// to answer its secondary; with the secondary's check forced unhealthy too, its primary in
// last resort; the record set given is not changed.
func TestExpectWithOverrides(t *testing.T) {
	rs := &config.RecordSet{Name: "www.example.test.", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
		{Value: "192.0.2.1", HealthCheck: "a", Role: config.RolePrimary}, {Value: "192.0.2.2", HealthCheck: "b", Role: config.RoleSecondary}}}
	drain := status.OverrideNote{Kind: "drain", Name: "www.example.test.", Type: "A", Value: "192.0.2.1"}
	states := map[string]string{"a": "healthy", "b": "healthy"}
	e, err := Expect(withOverrides(rs, states, []status.OverrideNote{drain}), states)
	if err != nil || e.Judge([]string{"192.0.2.2"}) != "" || e.Judge([]string{"192.0.2.1"}) == "" {
		t.Fatalf("drained primary: %+v %v", e, err)
	}
	states = map[string]string{"a": "healthy", "b": "healthy"}
	e, _ = Expect(withOverrides(rs, states, []status.OverrideNote{drain, {Kind: "unhealthy", Check: "b"}}), states)
	if e.Judge([]string{"192.0.2.1"}) != "" || e.Rule.String() != "last-resort" {
		t.Fatalf("drained primary, secondary forced down: %+v", e)
	}
	if rs.Records[0].HealthCheck != "a" {
		t.Fatal("the record set was changed")
	}
}
