package routing

import (
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestSelectDeterministic covers the cases whose answer does not depend on the random draw:
// each is checked under many draws.
func TestSelectDeterministic(t *testing.T) {
	tests := []struct {
		name   string
		rs     *config.RecordSet
		health Health
		want   []string // sorted
		rule   Rule
	}{
		{"simple answers all", set(config.PolicySimple, rec("a", ""), rec("b", ""), rec("c", "")), nil,
			[]string{"a", "b", "c"}, RuleAll},
		{"empty policy is simple", set("", rec("a", ""), rec("b", "")), nil, []string{"a", "b"}, RuleAll},
		{"simple ignores checks", set(config.PolicySimple, rec("a", "ca"), rec("b", "cb")), down("ca", "cb"),
			[]string{"a", "b"}, RuleAll},
		{"empty set", set(config.PolicyWeighted), nil, []string{}, RuleNoRecords},
		{"nil set", nil, nil, []string{}, RuleNoRecords},

		{"weighted one healthy non-zero", set(config.PolicyWeighted,
			weighted("a", "ca", 10), weighted("b", "cb", 20), weighted("z", "", 0)), down("cb"),
			[]string{"a"}, RuleWeighted},
		{"weighted zero-weight backup", set(config.PolicyWeighted,
			weighted("a", "ca", 10), weighted("b", "cb", 20), weighted("z", "", 0)), down("ca", "cb"),
			[]string{"z"}, RuleZeroWeight},
		{"weighted zero weight unused while non-zero healthy", set(config.PolicyWeighted,
			weighted("z", "", 0), weighted("a", "ca", 1)), nil, []string{"a"}, RuleWeighted},
		{"weighted unhealthy zero weight skipped", set(config.PolicyWeighted,
			weighted("a", "ca", 5), weighted("z1", "cz1", 0), weighted("z2", "", 0)), down("ca", "cz1"),
			[]string{"z2"}, RuleZeroWeight},
		{"weighted last resort uses non-zero weights", set(config.PolicyWeighted,
			weighted("a", "ca", 5), weighted("z", "cz", 0)), down("ca", "cz"),
			[]string{"a"}, RuleLastResort},
		{"weighted missing and negative weights count as zero", set(config.PolicyWeighted,
			rec("nil", "cn"), weighted("neg", "", -3), weighted("a", "ca", 1)), down("ca", "cn"),
			[]string{"neg"}, RuleZeroWeight},

		{"multivalue answers healthy", set(config.PolicyMultivalue,
			rec("a", "ca"), rec("b", "cb"), rec("c", "")), down("cb"), []string{"a", "c"}, RuleHealthy},
		{"multivalue last resort", set(config.PolicyMultivalue,
			rec("a", "ca"), rec("b", "cb")), down("ca", "cb"), []string{"a", "b"}, RuleLastResort},

		{"failover primary healthy", set(config.PolicyFailover,
			role("s", "cs", config.RoleSecondary), role("p", "cp", config.RolePrimary)), nil,
			[]string{"p"}, RulePrimary},
		{"failover primary down", set(config.PolicyFailover,
			role("p", "cp", config.RolePrimary), role("s", "cs", config.RoleSecondary)), down("cp"),
			[]string{"s"}, RuleSecondary},
		{"failover both down answers primary", set(config.PolicyFailover,
			role("p", "cp", config.RolePrimary), role("s", "cs", config.RoleSecondary)), down("cp", "cs"),
			[]string{"p"}, RuleLastResort},
		{"failover without secondary", set(config.PolicyFailover,
			role("p", "cp", config.RolePrimary)), down("cp"), []string{"p"}, RuleLastResort},
		{"failover without primary: the first other record stands in", set(config.PolicyFailover,
			role("s", "cs", config.RoleSecondary), rec("x", "cx")), down("cx"), []string{"s"}, RuleSecondary},
		{"failover with only a secondary answers it", set(config.PolicyFailover,
			role("s", "cs", config.RoleSecondary)), down("cs"), []string{"s"}, RuleLastResort},
		{"failover first primary counts", set(config.PolicyFailover,
			role("p1", "c1", config.RolePrimary), role("p2", "", config.RolePrimary),
			role("s", "cs", config.RoleSecondary)), down("c1"), []string{"s"}, RuleSecondary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(64) {
				got, rule, err := Select(tt.rs, tt.health, seed*0x9e3779b97f4a7c15, nil)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				var vs []string
				if tt.rs != nil {
					vs = values(tt.rs, got)
				}
				if vs := sorted(vs); !slices.Equal(vs, tt.want) && !(len(vs) == 0 && len(tt.want) == 0) {
					t.Fatalf("seed %d: answer %v, want %v", seed, vs, tt.want)
				}
				if rule != tt.rule {
					t.Fatalf("seed %d: rule %v, want %v", seed, rule, tt.rule)
				}
			}
		})
	}
}

func TestSelectUnknownPolicy(t *testing.T) {
	_, _, err := Select(set("geolocation", rec("a", "")), nil, 1, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "routing: ") || !strings.Contains(err.Error(), `"geolocation"`) {
		t.Fatalf("error %v, want a routing error naming the policy", err)
	}
	if _, err := Explain(set("geolocation", rec("a", "")), nil, 1); err == nil {
		t.Fatal("Explain accepted an unknown policy")
	}
}

// TestSelectAsksHealthOnce checks that each record's check is consulted at most once per
// selection, and never for records the policy does not need.
func TestSelectAsksHealthOnce(t *testing.T) {
	for _, policy := range []config.Policy{config.PolicySimple, config.PolicyWeighted, config.PolicyMultivalue, config.PolicyFailover} {
		rs := set(policy,
			role("a", "ca", config.RolePrimary), role("b", "cb", config.RoleSecondary), rec("c", "cc"))
		for i := range rs.Records {
			w := i
			rs.Records[i].Weight = &w
		}
		asked := map[string]int{}
		health := func(id string) bool { asked[id]++; return false }
		if _, _, err := Select(rs, health, 7, nil); err != nil {
			t.Fatal(err)
		}
		for id, n := range asked {
			if n > 1 {
				t.Errorf("%s: check %s asked %d times", policy, id, n)
			}
		}
		if policy == config.PolicySimple && len(asked) > 0 {
			t.Errorf("simple asked health: %v", asked)
		}
		if policy == config.PolicyFailover && asked["cc"] > 0 {
			t.Errorf("failover asked the health of a record that is neither primary nor secondary")
		}
	}
}

// TestSelectAllocatesNothing checks the hot path with a large enough buffer, for every
// policy, including last resort and a multivalue sample.
func TestSelectAllocatesNothing(t *testing.T) {
	var recs []config.Record
	for i := range 12 {
		r := weighted(string(rune('a'+i)), "c"+string(rune('a'+i)), i%3)
		r.Role = []config.Role{config.RolePrimary, config.RoleSecondary, ""}[i%3]
		recs = append(recs, r)
	}
	verdicts := map[string]bool{"ca": false, "cb": true}
	health := Health(func(id string) bool {
		ok, known := verdicts[id]
		return ok || !known
	})
	allDown := Health(func(string) bool { return false })
	buf := make([]int, 0, len(recs))
	for _, policy := range []config.Policy{config.PolicySimple, config.PolicyWeighted, config.PolicyMultivalue, config.PolicyFailover} {
		rs := set(policy, recs...)
		for _, h := range []Health{health, allDown} {
			rnd := uint64(1)
			allocs := testing.AllocsPerRun(100, func() {
				rnd++
				var err error
				buf, _, err = Select(rs, h, rnd, buf)
				if err != nil || len(buf) == 0 {
					t.Fatalf("%s: answer %v, error %v", policy, buf, err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s: %.1f allocations per Select, want 0", policy, allocs)
			}
		}
	}
}

// TestExplainAgreesWithSelect checks that the explained and the hot-path forms answer the
// same for the same draw, and that the explanation describes the answer.
func TestExplainAgreesWithSelect(t *testing.T) {
	rs := set(config.PolicyWeighted,
		weighted("a", "ca", 3), weighted("b", "cb", 1), weighted("c", "", 0), weighted("d", "cd", 7))
	h := down("cd")
	for seed := range uint64(200) {
		got, rule, err := Select(rs, h, seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Explain(rs, h, seed)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Answer, got) || res.Rule != rule {
			t.Fatalf("seed %d: Explain %v %v, Select %v %v", seed, res.Answer, res.Rule, got, rule)
		}
	}
	res, err := Explain(rs, h, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantHealth := []HealthState{HealthHealthy, HealthHealthy, HealthNoCheck, HealthUnhealthy}
	for i, c := range res.Candidates {
		if c.Index != i || c.Value != rs.Records[i].Value || c.Health != wantHealth[i] || !c.Eligible {
			t.Errorf("candidate %d: %+v, want health %v", i, c, wantHealth[i])
		}
		if c.Weight != *rs.Records[i].Weight {
			t.Errorf("candidate %d: weight %d, want %d", i, c.Weight, *rs.Records[i].Weight)
		}
		if c.Chosen != slices.Contains(res.Answer, i) {
			t.Errorf("candidate %d: chosen %v, answer %v", i, c.Chosen, res.Answer)
		}
	}
}

func TestExplainFailoverLastResort(t *testing.T) {
	rs := set(config.PolicyFailover,
		role("192.0.2.1", "primary-web", config.RolePrimary),
		role("198.51.100.1", "backup-web", config.RoleSecondary),
		rec("203.0.113.9", "stray"))
	res, err := Explain(rs, down("primary-web", "backup-web"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.LastResort || res.Rule != RuleLastResort || res.Policy != config.PolicyFailover {
		t.Fatalf("result %+v, want failover last resort", res)
	}
	if got := res.Values(); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Fatalf("answer %v, want the primary", got)
	}
	c := res.Candidates
	if c[0].Role != config.RolePrimary || c[1].Role != config.RoleSecondary || c[2].Role != "" {
		t.Errorf("roles %q %q %q", c[0].Role, c[1].Role, c[2].Role)
	}
	if c[2].Eligible || c[2].Health != HealthIgnored || c[2].Chosen {
		t.Errorf("stray record %+v, want ignored", c[2])
	}
	want := "failover last-resort: 192.0.2.1 (primary unhealthy, secondary unhealthy)"
	if got := res.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestExplainNilSet(t *testing.T) {
	res, err := Explain(nil, nil, 0)
	if err != nil || res.Rule != RuleNoRecords || len(res.Answer) != 0 || res.LastResort {
		t.Fatalf("Explain(nil) = %+v, %v", res, err)
	}
}

func TestWeightClamp(t *testing.T) {
	rs := set(config.PolicyWeighted, weighted("big", "", 1000))
	res, err := Explain(rs, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Candidates[0].Weight != MaxWeight {
		t.Fatalf("weight %d, want %d", res.Candidates[0].Weight, MaxWeight)
	}
}

func TestNames(t *testing.T) {
	for r := RuleNoRecords; r <= RuleLastResort; r++ {
		if s := r.String(); s == "" || strings.HasPrefix(s, "rule(") {
			t.Errorf("rule %d has no name", r)
		}
	}
	if s := Rule(200).String(); s != "rule(200)" {
		t.Errorf("Rule(200) = %q", s)
	}
	for h := HealthNoCheck; h <= HealthIgnored; h++ {
		if s := h.String(); s == "" || strings.HasPrefix(s, "health(") {
			t.Errorf("health state %d has no name", h)
		}
	}
	if b, err := RuleLastResort.MarshalText(); err != nil || string(b) != "last-resort" {
		t.Errorf("MarshalText = %q, %v", b, err)
	}
	if !RuleLastResort.LastResort() || RulePrimary.LastResort() {
		t.Error("LastResort is wrong")
	}
}
