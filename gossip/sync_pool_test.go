package gossip

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vigil-dns/vigil/checker"
)

// TestPushPullShipsNoCells: a checker's push/pull state holds its row's header, not its
// cells, so it is as small with 5,000 reports as with one; and once a location holds the
// row, push/pulls go on for a minute without a single row sent, while the location's row
// stays complete and fresh.
func TestPushPullShipsNoCells(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		local := func(c *Config) { c.Profile = ProfileLocal }
		c := newCluster(t, spec{regions: []string{"r1"}})
		defer c.close()
		ch := c.add("r1-c0", "r1", RoleChecker, local)
		if err := ch.Publish("check-00000", measuredEntry(0)); err != nil {
			t.Fatal(err)
		}
		one := len((*delegate)(ch).LocalState(false))
		for i := range 5000 {
			if err := ch.Publish(fmt.Sprintf("check-%05d", i), measuredEntry(i)); err != nil {
				t.Fatal(err)
			}
		}
		// Only the sequence numbers grow, by a byte each in the own header and the digest.
		if full := len((*delegate)(ch).LocalState(false)); full > one+2 || full > 200 {
			t.Errorf("push/pull state of %d bytes with 5,000 reports, %d with one", full, one)
		}
		loc := c.add("r1-l0", "r1", RoleLocation, local)
		waitFor(t, 30*time.Second, 100*time.Millisecond, "the location holds the row", func() bool {
			return len(rowGaps([]*Pool{loc}, []*Pool{ch})) == 0
		})
		time.Sleep(5 * time.Second)
		rows0 := testutil.ToFloat64(loc.m.received.WithLabelValues("rows"))
		states0 := testutil.ToFloat64(loc.m.received.WithLabelValues("state"))
		time.Sleep(time.Minute)
		if rows := testutil.ToFloat64(loc.m.received.WithLabelValues("rows")) - rows0; rows != 0 {
			t.Errorf("%v rows answers in a minute while nothing changed", rows)
		}
		if states := testutil.ToFloat64(loc.m.received.WithLabelValues("state")) - states0; states == 0 {
			t.Error("no push/pull in a minute: the test measured nothing")
		}
		if gaps := rowGaps([]*Pool{loc}, []*Pool{ch}); len(gaps) > 0 {
			t.Errorf("after a quiet minute: %v", gaps)
		}
		if fresh := freshCheckers(loc, "check-00001", 5*time.Second); len(fresh) != 1 {
			t.Errorf("fresh checkers %v, want [r1-c0]", fresh)
		}
		// A change that the location misses comes back as the change alone.
		ch.mu.Lock()
		ch.deltas.Reset()
		ch.mu.Unlock()
		loc.mu.Lock()
		loc.deltas.Reset()
		loc.mu.Unlock()
		rows0 = testutil.ToFloat64(loc.m.received.WithLabelValues("rows"))
		bytes0 := testutil.ToFloat64(loc.m.receivedBytes)
		if err := ch.Withdraw("check-00002"); err != nil {
			t.Fatal(err)
		}
		ch.mu.Lock()
		ch.deltas.Reset()
		ch.mu.Unlock()
		took := waitFor(t, 30*time.Second, 100*time.Millisecond, "the location repairs the missed withdrawal", func() bool {
			return len(rowGaps([]*Pool{loc}, []*Pool{ch})) == 0
		})
		rows := testutil.ToFloat64(loc.m.received.WithLabelValues("rows")) - rows0
		got := testutil.ToFloat64(loc.m.receivedBytes) - bytes0
		t.Logf("missed withdrawal repaired after %v by %v answers; %v bytes received meanwhile", took, rows, got)
		if rows == 0 || got > 10000 {
			t.Errorf("the repair took %v answers and %v bytes (the whole row is over 100,000)", rows, got)
		}
	})
}

// TestMixedVersionPool: a rolling upgrade. Nodes of wire version 1 (whole rows, set by
// legacySync) and of version 2 in one pool: every location holds every checker's complete
// row, through new publishes and withdrawals and a location that joins late. Version 1 nodes
// refuse version 2 as an unknown version (counted); version 2 nodes read version 1 and answer
// it in kind.
func TestMixedVersionPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old := func(c *Config) { c.legacySync = true }
		c := newCluster(t, spec{regions: []string{"r1", "r2"}})
		defer c.close()
		c.add("r1-l0", "r1", RoleLocation, old)
		c.add("r2-l0", "r2", RoleLocation, nil)
		checkers := []*Pool{c.add("r1-c0", "r1", RoleChecker, old), c.add("r2-c0", "r2", RoleChecker, nil)}
		publish := func(round int) {
			for _, ch := range checkers {
				for k := range 30 {
					check := fmt.Sprintf("check-%d", k)
					var err error
					if k%7 == round%7 {
						err = ch.Withdraw(check)
					} else {
						err = ch.Publish(check, Entry{Status: checker.StatusHealthy, Consecutive: uint32(round + 1)})
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		complete := func(what string) {
			t.Helper()
			var gaps []string
			start := time.Now()
			for time.Since(start) < 20*time.Second {
				if gaps = rowGaps(c.with(RoleLocation), checkers); len(gaps) == 0 {
					t.Logf("%s: every row complete everywhere after %v (simulated)", what, time.Since(start))
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Fatalf("%s: %d rows missing or behind:\n%s", what, len(gaps), strings.Join(gaps, "\n"))
		}
		publish(0)
		complete("first round")
		publish(1)
		complete("second round")
		time.Sleep(5 * time.Second)
		c.add("r1-l1", "r1", RoleLocation, old)
		c.add("r2-l1", "r2", RoleLocation, nil)
		complete("late locations")
		time.Sleep(time.Minute) // push/pulls between every pair of versions
		var refused, read float64
		for _, n := range c.nodes {
			if n.cfg.legacySync {
				refused += testutil.ToFloat64(n.m.dropped.WithLabelValues("invalid", reasonVersion))
			} else {
				read += testutil.ToFloat64(n.m.receivedV1.WithLabelValues("state"))
			}
		}
		if refused == 0 || read == 0 {
			t.Errorf("version 1 nodes refused %v version 2 messages, version 2 nodes read %v version 1 states: want both", refused, read)
		}
		complete("after a minute of push/pulls")
	})
}
