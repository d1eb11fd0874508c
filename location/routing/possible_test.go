package routing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestPossibilities: every answer Select gives, over many draws, is within Possibilities, and
// every record of the pool is answered by some draw (so the pool is not wider than the rule).
func TestPossibilities(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 17))
	policies := []config.Policy{config.PolicySimple, config.PolicyWeighted, config.PolicyMultivalue, config.PolicyFailover}
	for n := range 300 {
		policy := policies[n%len(policies)]
		var recs []config.Record
		var isDown []string
		for i := range 1 + rng.IntN(11) {
			check := ""
			if rng.IntN(4) > 0 {
				check = fmt.Sprintf("c%d", i)
				if rng.IntN(2) == 0 {
					isDown = append(isDown, check)
				}
			}
			r := weighted(fmt.Sprintf("192.0.2.%d", i), check, rng.IntN(3)*10)
			if policy == config.PolicyFailover {
				r.Weight = nil
				switch i {
				case 0:
					r.Role = config.RolePrimary
				case 1:
					r.Role = config.RoleSecondary
				}
			}
			recs = append(recs, r)
		}
		rs := set(policy, recs...)
		p, err := Possibilities(rs, down(isDown...))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for k := range 400 {
			ans, rule, err := Select(rs, down(isDown...), rng.Uint64(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(ans) != p.Size || rule != p.Rule {
				t.Fatalf("set %d draw %d (%s, down %v): answer %v by %s, possible %+v", n, k, policy, isDown, ans, rule, p)
			}
			for _, i := range ans {
				if !slices.Contains(p.Pool, i) {
					t.Fatalf("set %d (%s, down %v): answer %v outside the pool %v", n, policy, isDown, ans, p.Pool)
				}
				seen[i] = true
			}
		}
		if len(seen) != len(p.Pool) {
			t.Errorf("set %d (%s, down %v): 400 draws answered %d of the pool's %d records %v", n, policy, isDown, len(seen), len(p.Pool), p.Pool)
		}
	}
}
