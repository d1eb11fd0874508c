package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/gossip"
)

// newIssueCluster is the network of the partition stories' real-process runs, on the
// simulated regions: per region one node that is a checker and a location and one more checker, at the
// agent's gossip defaults (LAN profile, heartbeat 2s), examples/demo.yaml (checks every 1s,
// failure threshold 3, freshness 5s, hold 10s).
func newIssueCluster(t *testing.T) *simCluster {
	t.Helper()
	lan := func(cfg *agent.Config) {
		cfg.Gossip.Profile, cfg.Gossip.HeartbeatInterval, cfg.Gossip.RejoinInterval = gossip.ProfileLAN, 0, 0
		cfg.EvalInterval = 100 * time.Millisecond
	}
	return startCluster(t, 11, []agent.Roles{agent.RoleChecker | agent.RoleLocation, agent.RoleChecker}, lan)
}

// watchHealthy samples every location's answer for all.demo.vigil.test every 100ms for d and
// returns every sample that lacks a region's address, "region: answer at +time".
func (c *simCluster) watchHealthy(d time.Duration) []string {
	var bad []string
	t0 := time.Now()
	for time.Since(t0) < d {
		for _, r := range demoRegions {
			got, err := c.answers(r, "all.demo.vigil.test")
			if err != nil || len(got) != 3 {
				bad = append(bad, fmt.Sprintf("%s: %s at +%.1fs", r, fmtAnswer(got, err), time.Since(t0).Seconds()))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return bad
}

// TestNonTransitiveCut: the non-transitive partition. The us-east <-> sa-east link is cut while
// eu-west reaches both. Every endpoint stays up, and eu-west's checkers see all of them: the
// us-east checkers fail to reach sa-east's target and the sa-east checkers us-east's, but
// every location still hears, directly or relayed, more than 18% of checkers reporting each
// endpoint healthy. So for the whole cut every location answers all three addresses. Without
// gossip's heartbeat relays, progress and repairs across a cut link, us-east's location
// would drop sa-east's address for seconds.
func TestNonTransitiveCut(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6-node network in real time for a minute")
	}
	c := newIssueCluster(t)
	eventually(t, 30*time.Second, "every location hears all 6 checkers of every check healthy", func() (bool, string) {
		for _, r := range demoRegions {
			v, err := c.Location(r).Verdicts()
			if err != nil {
				return false, err.Error()
			}
			for _, id := range []string{"web-us-east", "web-eu-west", "web-sa-east"} {
				if x := v[id]; x.State.String() != "healthy" || x.Counts.Healthy != 6 {
					return false, fmt.Sprintf("%s: %s: %s %+v", r, id, x.State, x.Counts)
				}
			}
		}
		return true, ""
	})
	if bad := c.watchHealthy(5 * time.Second); len(bad) > 0 {
		t.Fatalf("before the cut: %s", strings.Join(bad, "; "))
	}
	if err := c.Cut("us-east", "sa-east"); err != nil {
		t.Fatal(err)
	}
	bad := c.watchHealthy(45 * time.Second)
	// The cut is real: us-east's checkers report sa-east's endpoint unhealthy by now.
	ex, err := c.Location("eu-west").ExplainCheck("web-sa-east")
	if err != nil || ex.Counts.Unhealthy == 0 {
		t.Errorf("eu-west's evidence for web-sa-east during the cut: %+v, %v (want us-east's failures)", ex.Counts, err)
	}
	if len(bad) > 0 {
		t.Errorf("%d samples lacked a healthy endpoint during the cut: %s", len(bad), strings.Join(bad[:min(len(bad), 10)], "; "))
	}
	c.Heal()
	eventually(t, 20*time.Second, "every location answers all three after healing", func() (bool, string) {
		for _, r := range demoRegions {
			got, err := c.answers(r, "all.demo.vigil.test")
			if err != nil || !slices.Equal(got, []string{"192.0.2.1", "198.51.100.1", "203.0.113.1"}) {
				return false, r + ": " + fmtAnswer(got, err)
			}
		}
		return true, ""
	})
}
