package verify

import (
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

func www() *config.RecordSet {
	return &config.RecordSet{Name: "www.demo.vigil.test.", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
		{Value: "192.0.2.1", HealthCheck: "web-us-east", Role: config.RolePrimary},
		{Value: "198.51.100.1", HealthCheck: "web-eu-west", Role: config.RoleSecondary},
	}}
}

func all() *config.RecordSet {
	return &config.RecordSet{Name: "all.demo.vigil.test.", Type: config.TypeA, Policy: config.PolicyMultivalue, Records: []config.Record{
		{Value: "192.0.2.1", HealthCheck: "web-us-east"},
		{Value: "198.51.100.1", HealthCheck: "web-eu-west"},
		{Value: "203.0.113.1", HealthCheck: "web-sa-east"},
	}}
}

// TestExpectJudge: what a location should answer comes from its verdicts and the policy, and
// an answer is judged against it with the reason.
func TestExpectJudge(t *testing.T) {
	for _, c := range []struct {
		name   string
		rs     *config.RecordSet
		states map[string]string
		got    []string
		want   string // "" agrees, else a part of the reason
	}{
		{"failover primary", www(), map[string]string{"web-us-east": "healthy"}, []string{"192.0.2.1"}, ""},
		{"failover primary unknown is served", www(), map[string]string{"web-us-east": "unknown"}, []string{"192.0.2.1"}, ""},
		{"failover to secondary", www(), map[string]string{"web-us-east": "unhealthy"}, []string{"198.51.100.1"}, ""},
		{"late failover", www(), map[string]string{"web-us-east": "unhealthy"}, []string{"192.0.2.1"}, "answered 192.0.2.1, which its verdicts exclude (secondary: 198.51.100.1)"},
		{"last resort", www(), map[string]string{"web-us-east": "unhealthy", "web-eu-west": "unhealthy"}, []string{"192.0.2.1"}, ""},
		{"nothing answered", www(), nil, nil, "answered 0 records, its verdicts give 1"},
		{"multivalue", all(), map[string]string{"web-sa-east": "unhealthy"}, []string{"198.51.100.1", "192.0.2.1"}, ""},
		{"multivalue too many", all(), map[string]string{"web-sa-east": "unhealthy"}, []string{"198.51.100.1", "192.0.2.1", "203.0.113.1"}, "which its verdicts exclude"},
		{"multivalue too few", all(), nil, []string{"198.51.100.1", "192.0.2.1"}, "answered 2 records, its verdicts give 3"},
		{"twice", all(), map[string]string{"web-sa-east": "unhealthy"}, []string{"192.0.2.1", "192.0.2.1"}, "twice"},
	} {
		e, err := Expect(c.rs, c.states)
		if err != nil {
			t.Fatal(err)
		}
		got := e.Judge(c.got)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: judged %q, want %q", c.name, got, c.want)
		}
	}
}

func TestExpectKeyChanges(t *testing.T) {
	a, _ := Expect(www(), map[string]string{"web-us-east": "healthy"})
	b, _ := Expect(www(), map[string]string{"web-us-east": "unhealthy"})
	c, _ := Expect(www(), map[string]string{"web-eu-west": "unhealthy"})
	if a.Key() == b.Key() || a.Key() != c.Key() {
		t.Errorf("keys: %q %q %q", a.Key(), b.Key(), c.Key())
	}
}
