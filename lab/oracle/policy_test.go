package oracle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// policyDoc returns record sets of each policy over the checks a, b and c.
func policyDoc() map[string]*config.RecordSet {
	w := func(n int) *int { return &n }
	sets := []config.RecordSet{
		{Name: "www", Policy: config.PolicyFailover, Records: []config.Record{
			{Value: "10.0.0.1", HealthCheck: "a", Role: config.RolePrimary},
			{Value: "10.0.0.2", HealthCheck: "b", Role: config.RoleSecondary},
		}},
		{Name: "all", Policy: config.PolicyMultivalue, Records: []config.Record{
			{Value: "10.0.0.1", HealthCheck: "a"},
			{Value: "10.0.0.2", HealthCheck: "b"},
			{Value: "10.0.0.3", HealthCheck: "c"},
		}},
		{Name: "api", Policy: config.PolicyWeighted, Records: []config.Record{
			{Value: "10.0.0.1", HealthCheck: "a", Weight: w(50)},
			{Value: "10.0.0.2", HealthCheck: "b", Weight: w(50)},
		}},
		{Name: "@", Records: []config.Record{{Value: "10.0.0.9"}}},
	}
	out := map[string]*config.RecordSet{}
	for i := range sets {
		out[sets[i].Name] = &sets[i]
	}
	return out
}

func TestPermitted(t *testing.T) {
	sets := policyDoc()
	tests := []struct {
		name, set string
		down      string // checks not serving
		want      string // pool/count/last resort
	}{
		{"failover primary", "www", "", "10.0.0.1/1/false"},
		{"failover secondary", "www", "a", "10.0.0.2/1/false"},
		{"failover secondary down only", "www", "b", "10.0.0.1/1/false"},
		{"failover last resort", "www", "ab", "10.0.0.1/1/true"},
		{"multivalue healthy", "all", "b", "10.0.0.1 10.0.0.3/2/false"},
		{"multivalue last resort", "all", "abc", "10.0.0.1 10.0.0.2 10.0.0.3/3/true"},
		{"weighted healthy", "api", "a", "10.0.0.2/1/false"},
		{"weighted last resort", "api", "ab", "10.0.0.1 10.0.0.2/1/true"},
		{"simple ignores health", "@", "abc", "10.0.0.9/1/false"},
	}
	for _, tt := range tests {
		a := Permitted(sets[tt.set], func(id string) bool { return !strings.Contains(tt.down, id) })
		if got := fmt.Sprintf("%s/%d/%v", strings.Join(a.Pool, " "), a.Count, a.LastResort); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestOwnerName(t *testing.T) {
	tests := []struct{ name, apex, want string }{
		{"www", "example.test.", "www.example.test."},
		{"@", "example.test", "example.test."},
		{"", "Example.Test.", "example.test."},
		{"WWW.example.test", "example.test.", "www.example.test."},
		{"www.other.test.", "example.test.", "www.other.test."},
		{"a.b", "example.test.", "a.b.example.test."},
	}
	for _, tt := range tests {
		if got := OwnerName(tt.name, tt.apex); got != tt.want {
			t.Errorf("OwnerName(%q, %q) = %q, want %q", tt.name, tt.apex, got, tt.want)
		}
	}
}
