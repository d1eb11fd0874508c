package gossip

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/regions"
)

// rowGaps lists, for every location, the checkers whose rows it does not hold complete and
// equal to the checker's own row (same sequence, same number of reports).
func rowGaps(locations, checkers []*Pool) []string {
	var gaps []string
	for _, ch := range checkers {
		ch.mu.Lock()
		seq, cells := ch.own.seq, len(ch.own.cells)
		ch.mu.Unlock()
		for _, l := range locations {
			l.mu.Lock()
			r := l.table.rows[ch.ID()]
			switch {
			case r == nil:
				gaps = append(gaps, l.ID()+" never heard "+ch.ID())
			case r.seq < seq || !r.complete() || r.cells.len() != cells || r.progress.IsZero():
				gaps = append(gaps, fmt.Sprintf("%s holds %s at seq %d/%d want %d, %d/%d reports, progress %v",
					l.ID(), ch.ID(), r.seq, seq, r.want, r.cells.len(), cells, !r.progress.IsZero()))
			}
			l.mu.Unlock()
		}
	}
	return gaps
}

// TestLateRowsRepairedQuickly: nodes start in the order a running network starts them
// (locations first, then checkers that publish at once), the checkers publish a second round,
// and one location joins after every report has spread. After each step every location must
// hold every checker's complete row within 15 s (simulated), through heartbeats and row repair,
// not push/pull alone (30 s at LAN). Each profile runs a few times: how gossip spreads depends
// on goroutine scheduling; without heartbeats and row repair, most runs of this test have a
// row missing or behind after 3 s. Over 4,800 steps: p50 0.55 s, p99 4.5 s, slowest 12.4 s
// (BENCHMARKS.md).
func TestLateRowsRepairedQuickly(t *testing.T) {
	for _, profile := range []struct {
		name string
		p    Profile
		beat time.Duration
	}{{"lan", ProfileLAN, time.Second}, {"local", ProfileLocal, 500 * time.Millisecond}} {
		for run := range 4 {
			t.Run(fmt.Sprintf("%s/%d", profile.name, run), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					tune := func(c *Config) {
						c.Profile, c.HeartbeatInterval, c.RejoinInterval = profile.p, profile.beat, time.Second
					}
					c := newCluster(t, spec{regions: []string{"r1", "r2", "r3"}})
					defer c.close()
					regs := []string{"r1", "r2", "r3"}
					for _, r := range regs {
						c.add(r+"-l0", r, RoleLocation, tune)
					}
					publish := func(n *Pool, round int) {
						for k := range 3 {
							e := Entry{Status: checker.StatusHealthy, Consecutive: uint32(round + 1), Reason: "http 200"}
							if err := n.Publish(fmt.Sprintf("check-%d", k), e); err != nil {
								t.Error(err)
							}
						}
					}
					for _, r := range regs {
						for i := range 2 {
							publish(c.add(fmt.Sprintf("%s-c%d", r, i), r, RoleChecker, tune), 0)
						}
					}
					complete := func(what string) {
						t.Helper()
						checkers, locations := c.with(RoleChecker), c.with(RoleLocation)
						start := time.Now()
						var gaps []string
						for time.Since(start) < 15*time.Second {
							if gaps = rowGaps(locations, checkers); len(gaps) == 0 {
								break
							}
							time.Sleep(50 * time.Millisecond)
						}
						if len(gaps) > 0 {
							t.Fatalf("%s: after %v, %d rows missing or behind:\n%s", what, time.Since(start), len(gaps), strings.Join(gaps, "\n"))
						}
						t.Logf("%s: every location holds every checker's complete row after %v (simulated)", what, time.Since(start))
					}
					complete("checkers started")
					// The checkers keep probing: a second round of reports.
					for _, ch := range c.with(RoleChecker) {
						publish(ch, 1)
					}
					complete("second round")
					// Every report has spread by now; then a location joins late.
					time.Sleep(5 * time.Second)
					c.add("r2-l1", "r2", RoleLocation, tune)
					complete("late location")
				})
			})
		}
	}
}

// TestLackingAndNodeAt: the rows a repair round asks for again, and the address an answer to
// an asker that is not a member yet goes to.
func TestLackingAndNodeAt(t *testing.T) {
	tb := NewTable(10)
	tb.applyHeartbeat(header{checker: "b", gen: 1, seq: 2, beat: 1}, at(0)) // heard of seq 2
	tb.applyHeartbeat(header{checker: "a", gen: 1, seq: 0, beat: 1}, at(0)) // nothing to miss
	tb.applyDelta(delta{header: header{checker: "c", gen: 1, seq: 3, beat: 1}, op: opWithdrawAll}, at(0))
	if got := strings.Join(tb.lacking(10), ","); got != "b,c" {
		t.Errorf("lacking %q, want b,c", got)
	}
	if got := strings.Join(tb.lacking(1), ","); got != "b" {
		t.Errorf("lacking at most 1: %q, want b", got)
	}
	tb.applyRow(&fullRow{header: header{checker: "b", gen: 1, seq: 2, beat: 1}}, at(1), false)
	if got := strings.Join(tb.lacking(10), ","); got != "c" {
		t.Errorf("after b's row: lacking %q, want c", got)
	}

	if n := nodeAt("l1", "10.1.0.7:7946"); n == nil || n.Name != "l1" || n.Address() != "10.1.0.7:7946" {
		t.Errorf("nodeAt: %+v", n)
	}
	if n := nodeAt("l1", "[::1]:7946"); n == nil || n.Address() != "[::1]:7946" {
		t.Errorf("nodeAt v6: %+v", n)
	}
	for _, bad := range []string{"", "10.1.0.7", "host.example:7946", "10.1.0.7:0", "10.1.0.7:70000", "10.1.0.7:x"} {
		if n := nodeAt("l1", bad); n != nil {
			t.Errorf("nodeAt(%q) = %+v, want nil", bad, n)
		}
	}
}

// TestRelayedAskSpreadsAcrossRegions: an ask for a row the node holds, that no checker
// answers itself, goes to two peers of two other regions (a row missed behind a cut is missed
// by the node's own region too); an ask for a row not held, answered whole, goes to one.
func TestRelayedAskSpreadsAcrossRegions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: partitionRegions})
		defer c.close()
		for _, r := range partitionRegions {
			c.add(r+"-1", r, RoleChecker|RoleLocation, nil)
			c.add(r+"-2", r, RoleChecker, nil)
		}
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		sa := c.nodes[4]
		if sa.ID() != "sa-1" {
			t.Fatalf("node 4 is %s, want sa-1", sa.ID())
		}
		regionOf := map[string]string{}
		for _, n := range c.nodes {
			regionOf[n.ID()] = n.cfg.Region
		}
		held := job{asks: []ask{{checker: "us-2", gen: 1, seq: 3}}}
		for range 50 {
			to := sa.targets(held)
			if len(to) != relayedAsks {
				t.Fatalf("an ask for a held row went to %d peers, want %d", len(to), relayedAsks)
			}
			a, b := regionOf[to[0].Name], regionOf[to[1].Name]
			if a == b || a == "sa" || b == "sa" {
				t.Fatalf("an ask for a held row went to %s (%s) and %s (%s), want two regions other than sa", to[0].Name, a, to[1].Name, b)
			}
		}
		whole := job{asks: []ask{{checker: "us-2"}, {checker: "eu-2", gen: 1, seq: 3}}}
		if to := sa.targets(whole); len(to) != 1 {
			t.Fatalf("an ask with a row not held went to %d peers, want 1", len(to))
		}
	})
}

// TestRegionRepairNotHeldByCutDials: sa is cut off from every other region while sa-1 has a
// repair ask in flight to each of four checkers across the cut (each dial waits for
// memberlist's TCP timeout, as behind a real cut); an ask to sa-2, in sa-1's own region,
// still reaches it within a second. With one set of send slots for every peer, the four
// dials took them all and the ask waited 9.95 s for the first to time out.
func TestRegionRepairNotHeldByCutDials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"us", "eu", "sa"}})
		defer c.close()
		far := []string{"us-1", "us-2", "eu-1", "eu-2"}
		for _, id := range far {
			c.add(id, id[:2], RoleChecker, nil)
		}
		sa1 := c.add("sa-1", "sa", RoleChecker|RoleLocation, nil)
		sa2 := c.add("sa-2", "sa", RoleChecker, nil)
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		if err := c.net.Isolate("sa"); err != nil {
			t.Fatal(err)
		}
		sa1.mu.Lock()
		for _, id := range far {
			sa1.want(id, []string{id})
		}
		sa1.mu.Unlock()
		time.Sleep(100 * time.Millisecond) // the four dials start
		requests := func() float64 {
			return testutil.ToFloat64(sa2.m.received.WithLabelValues(kindRequest.String()))
		}
		before := requests()
		sa1.mu.Lock()
		// A heartbeat or delta of sa-2 during the sleep may have had sa-1 ask for its row,
		// received before the count above; the row is asked for at most once a second.
		delete(sa1.requested, "sa-2")
		sa1.want("sa-2", []string{"sa-2"})
		sa1.mu.Unlock()
		took := waitFor(t, 30*time.Second, 50*time.Millisecond, "sa-2 receives sa-1's ask", func() bool {
			return requests() > before
		})
		if took > time.Second {
			t.Errorf("sa-2 received sa-1's ask %v after it was made, behind the dials into the cut (want within 1s)", took)
		}
	})
}

// TestHeartbeatsDoNotPinAsksToTheirChecker: a location behind on a row hears the row's
// checker's heartbeat every second, as fast as a row may be asked for, and the checker never
// answers (a node of wire version 1 drops a version 2 ask unanswered). The asks must not all
// go to that checker: after one that did not help, the row is asked of other peers. Before,
// every heartbeat sent the ask to the checker again and left repair's ask of other peers
// none to send; in 1 of about 120 runs of TestMixedVersionPool, a late location's row of a
// version 1 checker stayed empty past 20 s that way.
func TestHeartbeatsDoNotPinAsksToTheirChecker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw, err := regions.NewNetwork(1, "r1")
		if err != nil {
			t.Fatal(err)
		}
		tr, err := nw.NewTransport("r1")
		if err != nil {
			t.Fatal(err)
		}
		n, err := New(Config{ID: "r1-l0", Region: "r1", Roles: RoleLocation, Version: "test", Transport: tr,
			Keys: [][]byte{testKey}, Logger: testLogger(), HeartbeatInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Shutdown()
		var peers []string
		for beat := range uint64(6) {
			// The checker is at sequence 5; the location holds nothing of its row.
			(*delegate)(n).NotifyMsg(encodeHeartbeat(header{checker: "r1-c0", gen: 1, seq: 5, beat: beat + 1}))
			for len(n.work) > 0 {
				j := <-n.work
				if !j.answer {
					peers = append(peers, j.peer)
				}
			}
			time.Sleep(askAgainAfter)
		}
		t.Logf("asks went to %q (\"\": peers other than the checker)", peers)
		if len(peers) < 3 || !slices.Contains(peers, "") || peers[0] != "r1-c0" {
			t.Errorf("asks to %q over six heartbeats a second apart: want the first to the checker, then others to other peers", peers)
		}
	})
}
