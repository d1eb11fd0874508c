package agent_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/lab/cluster"
)

// The external tests' names for the internal tests' helpers (export_test.go).
var (
	eventually = agent.Eventually
	fmtAnswer  = agent.FmtAnswer
)

// simCluster is a cluster (package cluster) of the demo regions on the simulated network,
// with one demo target per region placed in it, serving examples/demo.yaml statically.
type simCluster struct{ *cluster.Cluster }

var demoRegions = []string{"us-east", "eu-west", "sa-east"}

// newSimCluster starts 3 regions × (1 location + 2 checkers). Locations start first, as in a
// running network: a location that joins after a checker's first reports spread hears them
// only from gossip's anti-entropy, which takes up to tens of seconds at memberlist's local
// profile.
func newSimCluster(t *testing.T) *simCluster {
	t.Helper()
	return startCluster(t, 7, []agent.Roles{agent.RoleLocation, agent.RoleChecker, agent.RoleChecker}, nil)
}

// startCluster starts a cluster of the demo regions, each with nodes of the given roles, on a
// simulated network seeded with seed; tune, when set, adjusts every node's configuration.
// It stops when the test ends, and the test fails if a node's Run failed.
func startCluster(t *testing.T, seed uint64, roles []agent.Roles, tune func(*agent.Config)) *simCluster {
	t.Helper()
	addrs := map[string]string{}
	for _, r := range demoRegions {
		addrs[r] = "127.0.0.1:0"
	}
	targets, err := cluster.NewTargets(addrs)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]int{}
	for r, tg := range targets {
		ports[r] = tg.Port()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cluster.Start(ctx, cluster.Options{
		Regions: demoRegions, Seed: seed, DataDir: t.TempDir(), Logger: agent.TestLogger(),
		Document: agent.DemoDocPorts(t, ports), Key: agent.TestKey, Targets: targets, Layout: roles, Node: tune,
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := c.Wait(); err != nil {
			t.Errorf("cluster: %v", err)
		}
	})
	return &simCluster{c}
}

// answers returns the A records a location's DNS socket answers for name.
func (c *simCluster) answers(region, name string) ([]string, error) {
	got, err := agent.Query(c.DNSAddr(region), name)
	slices.Sort(got)
	return got, err
}

// state is a location's current verdict of a check.
func (c *simCluster) state(region, check string) string {
	v, err := c.Location(region).Verdicts()
	if err != nil {
		return err.Error()
	}
	return v[check].State.String()
}

// The demo network on the simulated regions: DNS answers from the locations' real UDP sockets
// follow the targets' health; the São Paulo story (a region cut off keeps serving its own
// endpoint while the far locations drop it) and its healing.
func TestSimulatedRegions(t *testing.T) {
	if testing.Short() {
		t.Skip("a 9-node network in real time")
	}
	c := newSimCluster(t)
	interval := time.Second // the demo checks' interval
	for _, r := range demoRegions {
		eventually(t, 15*time.Second, r+": www answers the us-east record", func() (bool, string) {
			got, err := c.answers(r, "www.demo.vigil.test")
			return err == nil && slices.Equal(got, []string{"192.0.2.1"}), fmtAnswer(got, err)
		})
	}
	// Every checker is assigned its shard: 2 checkers per region probe each of the 3 checks.
	for _, m := range c.Members() {
		if m.Config().Roles.Has(agent.RoleChecker) {
			eventually(t, 5*time.Second, m.ID()+" assigned", func() (bool, string) {
				a := m.Node().Self().AssignedChecks
				return a == 3, fmt.Sprint(a)
			})
		}
	}
	// Warm: every location holds a fresh healthy report from each of the 6 checkers of every
	// probed check (not merely serving them open for want of reports). Gossip repairs a row a
	// location missed within a few seconds (measured p99 1.6s simulated, see BENCHMARKS.md);
	// the bound leaves room for a loaded machine.
	took := eventually(t, 15*time.Second, "every location hears all 6 checkers healthy", func() (bool, string) {
		for _, r := range demoRegions {
			v, err := c.Location(r).Verdicts()
			if err != nil {
				return false, err.Error()
			}
			for _, id := range []string{"web-us-east", "web-eu-west", "web-sa-east"} {
				if x := v[id]; x.State.String() != "healthy" || x.Counts.Fresh != 6 || x.Counts.Healthy != 6 {
					ex, _ := c.Location(r).ExplainCheck(id)
					var votes []string
					for _, vt := range ex.Votes {
						votes = append(votes, vt.Checker+"="+vt.Status.String()+" ("+vt.Why+")")
					}
					return false, fmt.Sprintf("%s: %s: %s %+v %v; members %d", r, id, x.State, x.Counts, votes, len(c.Location(r).Members()))
				}
			}
		}
		return true, ""
	})
	t.Logf("warm after %s", took)
	eventually(t, 5*time.Second, "all three regions in every location's answer", func() (bool, string) {
		for _, r := range demoRegions {
			got, err := c.answers(r, "all.demo.vigil.test")
			if err != nil || len(got) != 3 {
				return false, r + ": " + fmtAnswer(got, err)
			}
		}
		return true, ""
	})

	// A target made unhealthy drops out within (failure threshold + 2) intervals plus
	// propagation (one evaluation tick and gossip's delta spread, well under 2s here).
	if err := c.SetTargetDown("us-east", true); err != nil {
		t.Fatal(err)
	}
	bound := time.Duration(3+2)*interval + 2*time.Second
	took = eventually(t, bound, "us-east drops out of www everywhere", func() (bool, string) {
		for _, r := range demoRegions {
			got, err := c.answers(r, "www.demo.vigil.test")
			if err != nil || !slices.Equal(got, []string{"198.51.100.1"}) {
				return false, r + ": " + fmtAnswer(got, err)
			}
		}
		return true, ""
	})
	t.Logf("failover everywhere after %s (bound %s)", took, bound)
	if err := c.SetTargetDown("us-east", false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*interval+2*time.Second, "us-east back in www", func() (bool, string) {
		for _, r := range demoRegions {
			got, err := c.answers(r, "www.demo.vigil.test")
			if err != nil || !slices.Equal(got, []string{"192.0.2.1"}) {
				return false, r + ": " + fmtAnswer(got, err)
			}
		}
		return true, ""
	})

	// Cut sa-east off. Far locations hear only checkers that cannot reach the sa-east target:
	// they mark it unhealthy once sa-east's checkers go stale (freshness 5s) and their own fail
	// (3 × 1s). The sa-east location hears only sa-east's checkers, which still reach it.
	if err := c.Cut("sa-east"); err != nil {
		t.Fatal(err)
	}
	took = eventually(t, 5*time.Second+(3+2)*interval+5*time.Second, "far locations drop sa-east", func() (bool, string) {
		for _, r := range []string{"us-east", "eu-west"} {
			if st := c.state(r, "web-sa-east"); st != "unhealthy" {
				return false, r + ": " + st
			}
			got, err := c.answers(r, "all.demo.vigil.test")
			if err != nil || slices.Contains(got, "203.0.113.1") {
				return false, r + ": " + fmtAnswer(got, err)
			}
		}
		return true, ""
	})
	t.Logf("far locations dropped sa-east after %s", took)
	// Meanwhile, and for a while longer, the sa-east location keeps serving it.
	for range 10 {
		if st := c.state("sa-east", "web-sa-east"); st != "healthy" {
			ex, _ := c.Location("sa-east").ExplainCheck("web-sa-east")
			t.Fatalf("sa-east location: web-sa-east is %s during the cut: %s", st, ex.Sentence)
		}
		got, err := c.answers("sa-east", "all.demo.vigil.test")
		if err != nil || !slices.Contains(got, "203.0.113.1") {
			t.Fatalf("sa-east location does not answer its own endpoint: %s", fmtAnswer(got, err))
		}
		time.Sleep(200 * time.Millisecond)
	}
	ex, err := c.Location("us-east").ExplainCheck("web-sa-east")
	if err != nil || ex.Counts.Healthy != 0 || ex.Counts.Unhealthy == 0 {
		t.Errorf("us-east's evidence for web-sa-east: %+v, %v", ex.Counts, err)
	}

	// Heal: gossip rejoins, checkers reach the target again, and every location agrees.
	c.Heal()
	took = eventually(t, 25*time.Second, "agreement after healing", func() (bool, string) {
		for _, r := range demoRegions {
			if st := c.state(r, "web-sa-east"); st != "healthy" {
				return false, r + ": " + st
			}
			got, err := c.answers(r, "all.demo.vigil.test")
			if err != nil || len(got) != 3 {
				return false, r + ": " + fmtAnswer(got, err)
			}
		}
		return true, ""
	})
	t.Logf("agreement restored after %s", took)
}
