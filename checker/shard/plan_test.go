package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// doc returns a document with the given regions and checks built from DefaultCheck.
func doc(regions []string, checks ...config.Check) *config.Document {
	d := config.DefaultDocument()
	d.Regions = regions
	d.Checks = checks
	return &d
}

func check(id string, k int, regions ...string) config.Check {
	c := config.DefaultCheck()
	c.ID, c.Protocol, c.CheckersPerRegion, c.Regions = id, config.ProtocolHTTP, k, regions
	c.Target = config.Target{Host: "127.0.0.1", Port: 80}
	return c
}

func TestPlanShards(t *testing.T) {
	calc := config.DefaultCheck()
	calc.ID, calc.Protocol, calc.Children = "both", config.ProtocolCalculated, []string{"web", "api"}
	off := check("off", 2)
	off.Disabled = true
	d := doc([]string{"us-east", "eu-west", "sa-east"},
		check("web", 2), check("api", 3, "eu-west", "sa-east", "eu-west"), calc, off)
	m := Membership{
		"us-east": {"u1", "u2", "u3", "u4"},
		"eu-west": {"e1", "e2", "e3", "e4", "e5"},
		"sa-east": {"s1", "s2"},
	}
	p, err := NewPlan(d, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Checks(); !slices.Equal(got, []string{"web", "api"}) {
		t.Errorf("checks with shards = %v, want [web api]: calculated and disabled checks are not probed", got)
	}
	for _, tc := range []struct {
		check, region string
		want          []string
		anyOrder      bool
	}{
		{"web", "us-east", NewRegion("", m["us-east"]).Shard("web", 2), false},
		{"web", "eu-west", NewRegion("", m["eu-west"]).Shard("web", 2), false},
		{"api", "eu-west", NewRegion("", m["eu-west"]).Shard("api", 3), false},
		{"api", "sa-east", []string{"s1", "s2"}, true}, // fewer than k: all of them
		{"api", "us-east", nil, false},                 // not probed there
		{"both", "us-east", nil, false},                // calculated
		{"nope", "us-east", nil, false},
	} {
		got := p.Shard(tc.check, tc.region)
		if tc.anyOrder {
			slices.Sort(got)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Shard(%s, %s) = %v, want %v", tc.check, tc.region, got, tc.want)
		}
		if len(got) != len(slices.Compact(slices.Sorted(slices.Values(got)))) {
			t.Errorf("Shard(%s, %s) = %v repeats a checker", tc.check, tc.region, got)
		}
	}
	// ChecksFor is the checker's side of the same table.
	for region, members := range m {
		for _, c := range members {
			var want []string
			for _, id := range p.Checks() {
				if slices.Contains(p.Shard(id, region), c) {
					want = append(want, id)
				}
			}
			if got := p.ChecksFor(region, c); !slices.Equal(got, want) {
				t.Errorf("ChecksFor(%s, %s) = %v, want %v", region, c, got, want)
			}
		}
	}
	if got := p.ChecksFor("us-east", "stranger"); got != nil {
		t.Errorf("a non-member probes %v", got)
	}
}

// Nodes whose views list the same checkers in another order compute identical plans, and a
// plan updated in place equals one built fresh.
func TestPlanDeterministicAndUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 0))
	regions := []string{"r1", "r2", "r3"}
	var checks []config.Check
	for i := range 500 {
		checks = append(checks, check(fmt.Sprintf("check-%d", i), 1+rng.IntN(4)))
	}
	d := doc(regions, checks...)
	m1, m2 := Membership{}, Membership{}
	for _, r := range regions {
		m1[r] = ids(rng, r, 20+rng.IntN(20))
		m2[r] = shuffled(rng, m1[r])
	}
	a, err := NewPlan(d, m1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewPlan(d, Membership{"r1": ids(rng, "other", 7)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(m2); err != nil {
		t.Fatal(err)
	}
	for _, c := range a.Checks() {
		for _, r := range regions {
			if x, y := a.Shard(c, r), b.Shard(c, r); !slices.Equal(x, y) || len(x) == 0 {
				t.Fatalf("%s in %s: node A %v, node B %v", c, r, x, y)
			}
		}
	}
}

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  *config.Document
		m    Membership
		want string
	}{
		{"nil", nil, nil, "nil configuration"},
		{"duplicate", doc([]string{"a"}, check("x", 2), check("x", 2)), nil, `check "x": id empty or repeated`},
		{"k zero", doc([]string{"a"}, check("x", 0)), nil, "checkers_per_region 0"},
		{"unknown region", doc([]string{"a"}, check("x", 2, "b")), nil, `unknown region "b"`},
		{"membership region", doc([]string{"a"}, check("x", 2)), Membership{"zz": {"c"}}, `region "zz"`},
	} {
		_, err := NewPlan(tc.doc, tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "shard: ") {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestPlanPutRemove: a plan changed check by check (added, changed, made calculated or
// disabled, removed), through compactions, gives every check the shards a plan built afresh
// from the same checks gives it.
func TestPlanPutRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	regions := []string{"r1", "r2", "r3"}
	m := Membership{"r1": ids(rng, "a", 9), "r2": ids(rng, "b", 5), "r3": ids(rng, "c", 2)}
	p, err := NewPlan(doc(regions), m)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]config.Check{}
	for step := range 3000 {
		id := fmt.Sprintf("c%d", rng.IntN(150))
		switch rng.IntN(5) {
		case 0:
			p.Remove(id)
			delete(held, id)
		case 1:
			c := check(id, 2)
			if rng.IntN(2) == 0 {
				c.Protocol, c.Children = config.ProtocolCalculated, []string{"x"}
			} else {
				c.Disabled = true
			}
			if err := p.Put(&c); err != nil {
				t.Fatal(err)
			}
			held[id] = c
		default:
			c := check(id, 1+rng.IntN(4), regions[:1+rng.IntN(3)]...)
			if err := p.Put(&c); err != nil {
				t.Fatal(err)
			}
			held[id] = c
		}
		if step%500 != 499 {
			continue
		}
		var all []config.Check
		for _, c := range held {
			all = append(all, c)
		}
		fresh, err := NewPlan(doc(regions, all...), m)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := slices.Sorted(slices.Values(p.Checks())), slices.Sorted(slices.Values(fresh.Checks())); !slices.Equal(got, want) {
			t.Fatalf("step %d: checks %v, want %v", step, got, want)
		}
		for id := range held {
			for _, r := range regions {
				if got, want := p.Shard(id, r), fresh.Shard(id, r); !slices.Equal(got, want) {
					t.Fatalf("step %d: shard of %s in %s = %v, want %v", step, id, r, got, want)
				}
			}
		}
	}
	if p.dead > len(p.slots)+len(p.regionRefs) {
		t.Fatalf("%d unused entries beside %d: compaction does not run", p.dead, len(p.slots))
	}
}
