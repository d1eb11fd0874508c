package routing

import (
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestNoHealthy: with every record unhealthy, each policy answers by the set's choice (all,
// no data, fallback), and Possibilities agrees with Select; with a healthy record the choice
// changes nothing.
func TestNoHealthy(t *testing.T) {
	down := func(string) bool { return false }
	up := func(id string) bool { return id == "b" }
	for _, policy := range []config.Policy{config.PolicyFailover, config.PolicyWeighted, config.PolicyMultivalue} {
		for _, tc := range []struct {
			choice config.NoHealthy
			rule   Rule
			empty  bool
			fall   bool
		}{{"", RuleLastResort, false, false}, {config.NoHealthyNoData, RuleNoData, true, false}, {config.NoHealthyFallback, RuleFallback, false, true}} {
			rs := &config.RecordSet{Policy: policy, NoHealthy: tc.choice, Records: []config.Record{
				{Value: "192.0.2.1", HealthCheck: "a", Role: config.RolePrimary, Weight: ptr(1)},
				{Value: "192.0.2.2", HealthCheck: "b", Role: config.RoleSecondary, Weight: ptr(1)}}}
			if tc.fall {
				rs.Fallback = "203.0.113.9"
			}
			idx, rule, err := Select(rs, down, 7, nil)
			if err != nil || rule != tc.rule || (len(idx) == 0) != tc.empty || tc.fall != slices.Equal(idx, []int{2}) {
				t.Errorf("%s %q: %v %v %v", policy, tc.choice, idx, rule, err)
			}
			p, _ := Possibilities(rs, down)
			if p.Rule != rule || (tc.fall && !slices.Equal(p.Pool, []int{2})) || (tc.empty && (len(p.Pool) != 0 || p.Size != 0)) {
				t.Errorf("%s %q: possibilities %+v", policy, tc.choice, p)
			}
			res, _ := Explain(rs, down, 7)
			if res.Rule != rule || (tc.fall && !slices.Equal(res.Values(), []string{"203.0.113.9"})) {
				t.Errorf("%s %q: explain %+v", policy, tc.choice, res)
			}
			if idx, rule, _ := Select(rs, up, 7, nil); rule.NoHealthy() || !slices.Equal(idx, []int{1}) {
				t.Errorf("%s %q, b healthy: %v %v", policy, tc.choice, idx, rule)
			}
		}
	}
}

func ptr(v int) *int { return &v }
