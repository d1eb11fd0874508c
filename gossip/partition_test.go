package gossip

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/regions"
)

// The network of the partition stories' real-process runs: three regions, each with one node that is a
// checker and a location and one more checker, at the agent's defaults (LAN profile,
// heartbeat 2s), every checker reporting on one check per region, freshness window 5s
// (examples/demo.yaml), which the node passes to gossip as the agent does.
var partitionRegions = []string{"us", "eu", "sa"}

const partitionWindow = 5 * time.Second

// partitionCluster starts that network, waits for it to converge and every checker to
// report, and returns it with its checkers and locations.
func partitionCluster(t *testing.T) (c *cluster, checkers, locations []*Pool) {
	t.Helper()
	tune := func(cfg *Config) { cfg.HeartbeatInterval = 2 * time.Second }
	c = newCluster(t, spec{regions: partitionRegions})
	for _, r := range partitionRegions {
		c.add(r+"-1", r, RoleChecker|RoleLocation, tune).SetFreshnessWindow(partitionWindow)
		c.add(r+"-2", r, RoleChecker, tune).SetFreshnessWindow(partitionWindow)
	}
	waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
	checkers, locations = c.with(RoleChecker), c.with(RoleLocation)
	for _, ch := range checkers {
		for _, r := range partitionRegions {
			if err := ch.Publish("web-"+r, Entry{Status: checker.StatusHealthy, Consecutive: 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, 15*time.Second, 100*time.Millisecond, "every report fresh everywhere", func() bool {
		return len(staleRows(locations, checkers, partitionWindow, nil)) == 0
	})
	return c, checkers, locations
}

// inPartitionRuns runs f three times, each in a synctest bubble with partitionCluster's
// network, converged, closed when f returns.
func inPartitionRuns(t *testing.T, f func(t *testing.T, c *cluster, checkers, locations []*Pool)) {
	for run := range 3 {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, checkers, locations := partitionCluster(t)
				defer c.close()
				f(t, c, checkers, locations)
			})
		})
	}
}

// staleRows lists the (location, checker) pairs where the location holds no fresh report of
// the checker for web-eu (which every checker reports), skipping the pairs skip says to.
func staleRows(locations, checkers []*Pool, window time.Duration, skip func(loc, checker *Pool) bool) []string {
	now := time.Now()
	var out []string
	for _, l := range locations {
		for _, ch := range checkers {
			if skip != nil && skip(l, ch) {
				continue
			}
			fresh := false
			for _, r := range l.ReportsFor("web-eu") {
				if r.Checker == ch.ID() {
					fresh = r.Fresh(now, window)
				}
			}
			if !fresh {
				out = append(out, l.ID()+" <- "+ch.ID())
			}
		}
	}
	return out
}

// TestRelayedCheckersStayFresh: the us-sa link is cut while eu reaches both (a non-transitive
// partition). Every checker's progress still reaches every location, directly or relayed
// through eu, so for two simulated minutes, sampled every 100ms, every location holds every
// checker's reports fresh, while checkers keep changing reports (as the us and sa checkers do
// when they fail to reach the other side's target). Before the heartbeat relay budget was
// raised (each heartbeat relayed to one peer by each node in pools under 10), us-1 held
// sa's checkers stale for about half of the cut, and even eu's for a fifth: a location
// hearing only its own region's failures drops a healthy endpoint. At 2 heartbeats per
// window (the agent's 2s), a second now and then in 5 of 9 runs.
func TestRelayedCheckersStayFresh(t *testing.T) {
	inPartitionRuns(t, func(t *testing.T, c *cluster, checkers, locations []*Pool) {
		if err := c.net.Cut("us", "sa"); err != nil {
			t.Fatal(err)
		}
		stale := map[string]int{}
		for tick := range 1200 {
			time.Sleep(100 * time.Millisecond)
			if tick%30 == 0 { // every 3s one checker changes a report
				ch := checkers[(tick/30)%len(checkers)]
				st := checker.StatusUnhealthy
				if statusAt(ch, "web-us", ch.ID()) == st {
					st = checker.StatusHealthy
				}
				if err := ch.Publish("web-us", Entry{Status: st, Reason: fmt.Sprint(tick)}); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range staleRows(locations, checkers, partitionWindow, nil) {
				stale[p]++
			}
		}
		if len(stale) > 0 {
			var out []string
			for p, n := range stale {
				out = append(out, fmt.Sprintf("%s %.1fs", p, float64(n)/10))
			}
			slices.Sort(out)
			t.Errorf("reachable checkers counted stale during the us-sa cut (2 minutes): %s", strings.Join(out, ", "))
		}
	})
}

// TestCutOffCheckerNotRevived: sa is cut off from every other region, at a moment when eu's
// location has missed sa's last heartbeats (eu heard neither sa nor us for 3s before) and us
// holds them. No new word can come from sa after the cut, so sa's rows must stay stale at the
// far locations. Before, eu's location learnt sa's last heartbeats afterwards from us, in a
// push/pull digest or a repair answer, and counted sa's reports again for a whole freshness
// window: eu-west's location flapped sa-east's endpoint off, on and off again.
func TestCutOffCheckerNotRevived(t *testing.T) {
	inPartitionRuns(t, func(t *testing.T, c *cluster, _, locations []*Pool) {
		for _, from := range []string{"sa", "us"} {
			if err := c.net.CutOneWay(from, "eu"); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * time.Second)
		if err := c.net.Isolate("sa"); err != nil {
			t.Fatal(err)
		}
		if err := c.net.Heal("us", "eu"); err != nil {
			t.Fatal(err)
		}
		cut := time.Now()
		// What was in flight at the cut (us's relays of sa's last heartbeats) spreads
		// within a few gossip rounds.
		const inFlight = 2 * time.Second
		for range 900 { // 90s: more than two push/pull rounds at LAN
			time.Sleep(100 * time.Millisecond)
			for _, l := range locations {
				if l.cfg.Region == "sa" {
					continue
				}
				for _, r := range l.ReportsFor("web-eu") {
					if strings.HasPrefix(r.Checker, "sa-") && r.LastProgress.Sub(cut) > inFlight {
						t.Fatalf("%s counts cut-off %s as making progress %v after the cut", l.ID(), r.Checker, r.LastProgress.Sub(cut))
					}
				}
			}
		}
	})
}

// TestHeartbeatFollowsWindow: a checker heartbeats at least 5 times per freshness window,
// and never less often than its configured interval.
func TestHeartbeatFollowsWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1"}, checkers: 1, locations: 1,
			tune: func(cfg *Config) { cfg.HeartbeatInterval = 2 * time.Second }})
		defer c.close()
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		ch, loc := c.node("r1-c0"), c.node("r1-l0")
		if err := ch.Publish("api", Entry{Status: checker.StatusHealthy}); err != nil {
			t.Fatal(err)
		}
		beats := func(d time.Duration) uint64 {
			read := func() uint64 {
				loc.mu.Lock()
				defer loc.mu.Unlock()
				if r := loc.table.rows[ch.ID()]; r != nil {
					return r.beat
				}
				return 0
			}
			b0 := read()
			time.Sleep(d)
			return read() - b0
		}
		time.Sleep(time.Second)
		for _, s := range []struct {
			window   time.Duration
			min, max uint64
		}{{0, 4, 6}, {5 * time.Second, 9, 11}, {time.Minute, 4, 6}, {2 * time.Second, 24, 26}} {
			ch.SetFreshnessWindow(s.window)
			time.Sleep(3 * time.Second) // the old ticker's next beat, and relays
			if got := beats(10 * time.Second); got < s.min || got > s.max {
				t.Errorf("window %v: %d heartbeats in 10s, want %d to %d", s.window, got, s.min, s.max)
			}
		}
	})
}

// TestRestartedInCutRegion: sa is cut off, and its location restarts on the same address
// (kill -9 and start, as the real-process scenario location-restart does). Its seed is across
// the cut, so it joins no one; sa's checkers still know its address and keep talking to it,
// and it must hear them again within seconds. Before, it received their heartbeats but, a
// member of nothing, had no peer to ask for their rows, and counted no report for the whole
// cut (20s on real processes: it served every region's address, failing open).
func TestRestartedInCutRegion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, checkers, _ := partitionCluster(t)
		defer c.close()
		loc := c.add("sa-l", "sa", RoleLocation, func(cfg *Config) { cfg.HeartbeatInterval = 2 * time.Second })
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		if err := c.net.Isolate("sa"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Second)
		old := loc.cfg.Transport.(*regions.Transport)
		loc.Shutdown() // no goodbye: the pool finds it dead
		c.stop["sa-l"]()
		time.Sleep(3 * time.Second)
		tr, err := c.net.Restart(old)
		if err != nil {
			t.Fatal(err)
		}
		loc = c.add("sa-l", "sa", RoleLocation, func(cfg *Config) {
			cfg.Transport, cfg.HeartbeatInterval = tr, 2*time.Second
		})
		loc.SetFreshnessWindow(partitionWindow)
		var sa []*Pool
		for _, ch := range checkers {
			if ch.cfg.Region == "sa" {
				sa = append(sa, ch)
			}
		}
		took := waitFor(t, partitionWindow, 100*time.Millisecond, "the restarted location hears its region's checkers", func() bool {
			return len(staleRows([]*Pool{loc}, sa, partitionWindow, nil)) == 0
		})
		t.Logf("the restarted location counts its region's checkers %v after its start (simulated)", took)
	})
}

// TestDeadHintNoChurn: memberlist's dead verdict is a hint. At memberlist's local profile
// (vigil dev, vigil sim) with three checkers per region, a us-sa cut made sa's checkers
// declare one another dead, 1 to 4 times in 3 minutes (a dead message about a peer, relayed
// from a node across the cut, applied although the peer answers directly), and each such flip
// reassigned the region's checks and back. Now a checker whose progress still arrives stays
// live for assignment: in 3 minutes of the cut no node hears that a checker of its own region
// left, and each node's live checkers of its region stay whole. A checker that really dies
// leaves everyone's live checkers within the suspicion timeout plus a freshness window.
func TestDeadHintNoChurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var left []string
		watching := false
		tune := func(cfg *Config) {
			cfg.Profile, cfg.HeartbeatInterval, cfg.RejoinInterval = ProfileLocal, time.Second, 2*time.Second
			id, region := cfg.ID, cfg.Region
			cfg.OnMembership = func(e MemberEvent) {
				mu.Lock()
				defer mu.Unlock()
				if watching && e.Kind == MemberLeft && e.Member.Region == region && e.Member.Roles.Has(RoleChecker) {
					left = append(left, id+" <- "+e.Member.ID)
				}
			}
		}
		c := newCluster(t, spec{regions: partitionRegions})
		defer c.close()
		for _, r := range partitionRegions {
			c.add(r+"-l", r, RoleLocation, tune).SetFreshnessWindow(partitionWindow)
			for i := range 3 {
				c.add(fmt.Sprintf("%s-c%d", r, i), r, RoleChecker, tune).SetFreshnessWindow(partitionWindow)
			}
		}
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		time.Sleep(10 * time.Second) // every row heard, progress everywhere
		mu.Lock()
		watching = true
		mu.Unlock()
		if err := c.net.Cut("us", "sa"); err != nil {
			t.Fatal(err)
		}
		short := map[string]int{}
		for range 360 { // 3 minutes
			time.Sleep(500 * time.Millisecond)
			for _, n := range c.nodes {
				if got := len(n.Checkers()[n.cfg.Region]); got != 3 {
					short[n.ID()]++
				}
			}
		}
		mu.Lock()
		if len(left) > 0 || len(short) > 0 {
			t.Errorf("during the cut: checkers of their own region left %v; samples with fewer than 3 live checkers of their region %v", left, short)
		}
		left = nil
		mu.Unlock()

		// A real death: sa-c0 stops without a goodbye.
		c.node("sa-c0").Shutdown()
		c.stop["sa-c0"]()
		took := waitFor(t, 40*time.Second, 100*time.Millisecond, "sa-c0 leaves sa's live checkers everywhere", func() bool {
			for _, n := range c.nodes {
				if n.ID() == "sa-c0" || n.cfg.Region != "sa" {
					continue
				}
				if slices.Contains(n.Checkers()["sa"], "sa-c0") {
					return false
				}
			}
			return true
		})
		t.Logf("a dead checker left its region's live checkers %v after it stopped (simulated)", took)
	})
}

// TestCutOffRegionHearsItsCheckers: when sa is cut off from every other region, sa's location
// still hears each of sa's checkers at every heartbeat, though memberlist goes on gossiping
// to the members across the cut (four of each checker's five peers here): for 20 simulated
// seconds after the cut, sampled every 100 ms, sa-1 holds sa-2's progress within two
// heartbeats. Gossip alone left a heartbeat unheard often enough that real processes counted
// a report from before the cut for seconds (RESILIENCE.md, the cut-off location's tail).
func TestCutOffRegionHearsItsCheckers(t *testing.T) {
	inPartitionRuns(t, func(t *testing.T, c *cluster, _, _ []*Pool) {
		sa1, sa2 := c.node("sa-1"), c.node("sa-2")
		if err := c.net.Isolate("sa"); err != nil {
			t.Fatal(err)
		}
		beat := sa2.heartbeatInterval()
		worst := time.Duration(0)
		for range 200 {
			time.Sleep(100 * time.Millisecond)
			sa1.mu.Lock()
			r := sa1.table.rows[sa2.ID()]
			if r != nil {
				worst = max(worst, time.Since(r.progress))
			}
			sa1.mu.Unlock()
			if r == nil {
				t.Fatal("sa-1 holds no row of sa-2")
			}
		}
		if worst > 2*beat {
			t.Errorf("sa-1 went %v without progress from sa-2 (heartbeat every %v) while sa was cut off", worst, beat)
		}
	})
}
