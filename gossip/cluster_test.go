package gossip

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/quorum"
)

const window = 15 * time.Second // the default freshness window of config.QuorumSettings

// TestStatusChangeAndRegionCut: 3 regions × 3 checkers + 3 locations at LAN settings. A
// status change reaches every location within 2 s; a cut region's checkers go stale at the
// far locations and stay fresh at their own; after the cut heals, a long time later, every
// report is fresh everywhere again without a manual join.
func TestStatusChangeAndRegionCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1", "r2", "r3"}, checkers: 3, locations: 1})
		defer c.close()
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)

		checkers, locations := c.with(RoleChecker), c.with(RoleLocation)
		for _, ch := range checkers {
			if err := ch.Publish("api", Entry{Status: checker.StatusHealthy, Consecutive: 3, Reason: "http 200"}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, 10*time.Second, 100*time.Millisecond, "every report everywhere", func() bool {
			for _, l := range locations {
				if len(freshCheckers(l, "api", window)) != len(checkers) {
					return false
				}
			}
			return true
		})

		// One status change reaches every location within 2 s.
		changer := c.node("r2-c1")
		if err := changer.Publish("api", Entry{Status: checker.StatusUnhealthy, Consecutive: 3, Reason: "http 503"}); err != nil {
			t.Fatal(err)
		}
		took := waitFor(t, 2*time.Second, 10*time.Millisecond, "change reaches every location", func() bool {
			for _, l := range locations {
				if statusAt(l, "api", "r2-c1") != checker.StatusUnhealthy {
					return false
				}
			}
			return true
		})
		t.Logf("status change reached all %d locations in %v (simulated)", len(locations), took)

		// Cut r1 off for 3 minutes: far longer than memberlist's GossipToTheDeadTime.
		if err := c.net.Isolate("r1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Minute)
		r1 := []string{"r1-c0", "r1-c1", "r1-c2"}
		others := []string{"r2-c0", "r2-c1", "r2-c2", "r3-c0", "r3-c1", "r3-c2"}
		if got := freshCheckers(c.node("r1-l0"), "api", window); strings.Join(got, ",") != strings.Join(r1, ",") {
			t.Errorf("r1's location during the cut: fresh %v, want %v", got, r1)
		}
		for _, id := range []string{"r2-l0", "r3-l0"} {
			if got := freshCheckers(c.node(id), "api", window); strings.Join(got, ",") != strings.Join(others, ",") {
				t.Errorf("%s during the cut: fresh %v, want %v", id, got, others)
			}
		}
		if n := len(c.node("r2-l0").Members()); n != 8 {
			t.Errorf("r2-l0 sees %d members during the cut, want the 8 outside r1", n)
		}

		// A change inside the cut region is seen at home and not across the cut.
		if err := c.node("r1-c0").Publish("api", Entry{Status: checker.StatusUnhealthy, Reason: "timeout"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if got := statusAt(c.node("r1-l0"), "api", "r1-c0"); got != checker.StatusUnhealthy {
			t.Errorf("r1-l0 sees r1-c0 as %v, want unhealthy", got)
		}
		if got := statusAt(c.node("r3-l0"), "api", "r1-c0"); got != checker.StatusHealthy {
			t.Errorf("r3-l0 sees r1-c0 as %v across the cut, want its old healthy", got)
		}

		// Heal: no manual join; the periodic rejoin merges the pool again.
		c.net.HealAll()
		took = waitFor(t, 2*time.Minute, 250*time.Millisecond, "pool merges and every report is fresh", func() bool {
			if !c.converged() {
				return false
			}
			for _, l := range locations {
				if len(freshCheckers(l, "api", window)) != len(checkers) {
					return false
				}
				if statusAt(l, "api", "r1-c0") != checker.StatusUnhealthy {
					return false
				}
			}
			return true
		})
		t.Logf("after a 3-minute cut healed, all fresh again in %v (simulated)", took)
	})
}

// statusAt returns the status a location holds for one checker's report of check.
func statusAt(loc *Pool, check, id string) checker.Status {
	for _, r := range loc.ReportsFor(check) {
		if r.Checker == id {
			return statusOf(r)
		}
	}
	return checker.Status(255)
}

// nodeEntries returns every cell n's table holds (with a status or not), by checker and check.
func nodeEntries(n *Pool) map[[2]string]Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	return heldEntries(n.table)
}

// numReports counts the reports n holds, of every check.
func numReports(n *Pool) int {
	c := 0
	for _, rs := range n.Reports() {
		c += len(rs)
	}
	return c
}

// statusOf is the status of a report the table hands out (it hands out none without one).
func statusOf(r quorum.Report) checker.Status {
	if r.Healthy {
		return checker.StatusHealthy
	}
	return checker.StatusUnhealthy
}

// TestWithdraw: a checker that leaves a check's shard withdraws that report; one that can
// reach nothing withdraws all of them; every location follows.
func TestWithdraw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1", "r2"}, checkers: 1, locations: 1})
		defer c.close()
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		ch := c.node("r1-c0")
		for i := range 5 {
			if err := ch.Publish(fmt.Sprintf("check-%d", i), Entry{Status: checker.StatusHealthy}); err != nil {
				t.Fatal(err)
			}
		}
		loc := c.node("r2-l0")
		count := func() int {
			n := 0
			for _, rs := range loc.Reports() {
				for _, r := range rs {
					if r.Checker == "r1-c0" {
						n++
					}
				}
			}
			return n
		}
		waitFor(t, 2*time.Second, 10*time.Millisecond, "five reports", func() bool { return count() == 5 })
		if err := ch.Withdraw("check-3"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Second, 10*time.Millisecond, "one withdrawn", func() bool {
			return count() == 4 && statusAt(loc, "check-3", "r1-c0") == checker.Status(255)
		})
		if err := ch.WithdrawAll(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Second, 10*time.Millisecond, "all withdrawn", func() bool { return count() == 0 })
		if err := loc.Publish("x", Entry{}); err == nil {
			t.Error("a location published a report")
		}
	})
}

// TestForgetDeadPeersAndRows: a checker that dies (no goodbye) is rejoined for a while, its
// row stays until RowTTL after it stopped changing, and then both are forgotten: nothing
// grows without bound.
func TestForgetDeadPeersAndRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1"}, checkers: 1, locations: 1, tune: func(cfg *Config) {
			cfg.RowTTL = 2 * time.Minute
			cfg.ForgetPeersAfter = 5 * time.Minute
		}})
		defer c.close()
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		ch, loc := c.node("r1-c0"), c.node("r1-l0")
		if err := ch.Publish("api", Entry{Status: checker.StatusHealthy}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Second, 10*time.Millisecond, "report arrives", func() bool { return numReports(loc) == 1 })
		ch.Shutdown()
		waitFor(t, time.Minute, time.Second, "checker declared dead", func() bool { return len(loc.Members()) == 1 })
		known := func() int {
			loc.mu.Lock()
			defer loc.mu.Unlock()
			return len(loc.known)
		}
		if known() != 1 || numReports(loc) != 1 {
			t.Fatalf("right after death: %d known peers, %d reports; want 1 and 1", known(), numReports(loc))
		}
		waitFor(t, 4*time.Minute, time.Second, "row forgotten", func() bool { return numReports(loc) == 0 })
		if known() != 1 {
			t.Error("the dead peer was forgotten before ForgetPeersAfter")
		}
		waitFor(t, 7*time.Minute, time.Second, "peer forgotten", func() bool { return known() == 0 })
		if testutil.ToFloat64(loc.m.rejoins) == 0 {
			t.Error("the dead peer was never rejoined")
		}
	})
}

// TestMembershipEvents: a location hears joins, a graceful leave and a death, in order, and
// its live checkers per region follow.
func TestMembershipEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		c := newCluster(t, spec{regions: []string{"r1"}, locations: 1})
		defer c.close()
		loc := c.node("r1-l0")
		c.add("r2-c0", "r1", RoleChecker, nil)
		c3 := c.add("r3-c0", "r1", RoleChecker, nil)
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		if got := loc.Checkers(); len(got["r1"]) != 2 {
			t.Fatalf("live checkers %v", got)
		}
		watcher := c.add("watcher", "r1", RoleLocation, func(cfg *Config) {
			cfg.OnMembership = func(e MemberEvent) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("%s %s dead=%v", e.Kind, e.Member.ID, e.Dead))
			}
		})
		waitFor(t, 30*time.Second, 100*time.Millisecond, "watcher joins", c.converged)
		c.stop["r2-c0"]() // leaves gracefully
		waitFor(t, 30*time.Second, 100*time.Millisecond, "leave seen", func() bool { return len(watcher.Members()) == 3 })
		c3.Shutdown() // dies
		waitFor(t, time.Minute, 100*time.Millisecond, "death seen", func() bool { return len(watcher.Members()) == 2 })
		mu.Lock()
		defer mu.Unlock()
		want := map[string]bool{"joined r2-c0 dead=false": true, "joined r3-c0 dead=false": true,
			"joined r1-l0 dead=false": true, "left r2-c0 dead=false": true, "left r3-c0 dead=true": true}
		for _, e := range got {
			delete(want, e)
		}
		if len(want) != 0 {
			t.Errorf("events %v lack %v", got, want)
		}
		if ch := watcher.Checkers(); len(ch["r1"]) != 0 {
			t.Errorf("live checkers after both left: %v", ch)
		}
	})
}

// TestRestartOnNewAddress: a node that died and comes back under the same name on a new
// address (a restarted pod, a restarted node of `vigil sim`) is back in the pool at once, not
// when its old address is forgotten. Found by `vigil sim chaos`: memberlist refused the new
// address ("Conflicting address", the old one dead) and a restarted location heard no checker
// for up to 7s, serving fail-open meanwhile.
func TestRestartOnNewAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1"}, checkers: 1, locations: 1})
		defer c.close()
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		loc := c.node("r1-l0")
		c.node("r1-c0").Shutdown() // dies: no leave
		waitFor(t, time.Minute, 100*time.Millisecond, "checker declared dead", func() bool { return len(loc.Members()) == 1 })
		c.stop["r1-c0"]()
		// A new transport, so a new address; it joins through the location.
		again := c.add("r1-c0", "r1", RoleChecker, func(cfg *Config) { cfg.Seeds = []string{loc.Addr()} })
		took := waitFor(t, 30*time.Second, 100*time.Millisecond, "the restarted checker is back", func() bool {
			return len(loc.Checkers()["r1"]) == 1 && len(again.Members()) == 2
		})
		if bound := 5 * time.Second; took > bound {
			t.Errorf("the restarted checker was back after %v, want within %v", took, bound)
		}
		t.Logf("back in the pool %v after it started", took)
	})
}

// TestStopWhileJoiningBlackHoles: a node whose seeds are all behind a cut link stops within
// about one dial timeout, not one per seed. Found by `vigil sim chaos`: a checker restarted
// while links were cut (every running node its seed) took up to 14.6s to stop.
func TestStopWhileJoiningBlackHoles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1", "r2"}, checkers: 8})
		defer c.close()
		waitFor(t, time.Minute, 100*time.Millisecond, "pool converges", c.converged)
		var seeds []string
		for _, n := range c.with(RoleChecker) {
			if n.cfg.Region == "r1" {
				seeds = append(seeds, n.Addr())
			}
		}
		if err := c.net.Cut("r1", "r2"); err != nil {
			t.Fatal(err)
		}
		tr, err := c.net.NewTransport("r2")
		if err != nil {
			t.Fatal(err)
		}
		n, err := New(Config{ID: "late", Region: "r2", Roles: RoleLocation, Version: "test", Transport: tr,
			Keys: [][]byte{testKey}, Registerer: prometheus.NewRegistry(), Logger: testLogger(), Seeds: seeds})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- n.Run(ctx) }()
		time.Sleep(500 * time.Millisecond) // dialling the first seed
		cancel()
		stopped := time.Now()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("run did not return within a minute")
		}
		// A dial into the cut link lasts memberlist's TCP timeout (10s at LAN settings) and the
		// one in flight is waited for; the 8 seeds in a row took 8 of them (over a minute).
		if took, bound := time.Since(stopped), 15*time.Second; took > bound {
			t.Errorf("stopped %v after its context ended, want within %v (%d unreachable seeds)", took, bound, len(seeds))
		}
	})
}
