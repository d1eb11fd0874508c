package gossip

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestMassJoinConverges: half as many nodes again join at once, each through a different
// member. A joiner learns the pool as its seed knew it at that instant; the others joining
// at the same moment reach it only by broadcasts that may have run out before it was known,
// or by memberlist's push/pull, every 15s or more. vigil sim fleet-growth saw new checkers
// miss each other for up to 20s, and so take checks that were not theirs. Every view must
// be whole within seconds (simulated), before memberlist's own push/pull.
func TestMassJoinConverges(t *testing.T) {
	for round := range 3 {
		synctest.Test(t, func(t *testing.T) {
			local := func(c *Config) { c.Profile = ProfileLocal }
			c := newCluster(t, spec{regions: []string{"r1", "r2", "r3"}, checkers: 6, locations: 1, tune: local})
			defer c.close()
			waitFor(t, time.Minute, 100*time.Millisecond, "the first 21 nodes converge", c.converged)
			time.Sleep(5 * time.Second)
			seeds := make([]string, len(c.nodes))
			for i, n := range c.nodes {
				seeds[i] = n.Addr()
			}
			for i := range 9 {
				region := fmt.Sprintf("r%d", i%3+1)
				c.add(fmt.Sprintf("%s-new%d", region, i), region, RoleChecker, func(cfg *Config) {
					local(cfg)
					cfg.Seeds = []string{seeds[(i*7+round)%len(seeds)]}
				})
			}
			took := waitFor(t, time.Minute, 100*time.Millisecond, "30 nodes converge", c.converged)
			t.Logf("round %d: 9 joiners seen by all 30 nodes after %v (simulated)", round, took)
			// Usually 1 to 2 s (the catch-up at 1 s); on a loaded machine over 6 s (the catch-ups
			// at 1, 2 and 4 s each ask a member that does not know every joiner yet).
			// 10 s is still well within memberlist's own push/pull of 15 s or more.
			if took > 10*time.Second {
				t.Errorf("round %d: every view whole only after %v, want within 10s", round, took)
			}
		})
	}
}
