package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestPlanAssigned: Assigned counts the distinct checkers that Shard names, over random plans.
func TestPlanAssigned(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	regions := []string{"r1", "r2", "r3"}
	for round := range 20 {
		var checks []config.Check
		for i := range 1 + rng.IntN(30) {
			checks = append(checks, check(fmt.Sprintf("c%d", i), 1+rng.IntN(3), regions[:1+rng.IntN(3)]...))
		}
		d := doc(regions, checks...)
		m := Membership{}
		for _, r := range regions {
			for j := range rng.IntN(6) {
				m[r] = append(m[r], fmt.Sprintf("%s-%d", r, j))
			}
		}
		p, err := NewPlan(d, m)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, c := range checks {
			for _, r := range regions {
				for _, id := range p.Shard(c.ID, r) {
					want[id] = true
				}
			}
		}
		if got := p.Assigned(); got != len(want) {
			t.Fatalf("round %d: Assigned %d, Shard names %d checkers", round, got, len(want))
		}
	}
}
