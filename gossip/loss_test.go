package gossip

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/quorum"
)

// published is one report a checker published, and when it stopped being current.
type published struct {
	seq   uint64
	entry Entry
	from  time.Time
	until time.Time // zero while current
}

// history records what every checker published, to judge what locations count.
type history map[string][]published // key checker/check

func (h history) publish(t *testing.T, n *Pool, check string, e Entry) {
	t.Helper()
	if err := n.Publish(check, e); err != nil {
		t.Fatal(err)
	}
	key := n.ID() + "/" + check
	now := time.Now()
	var seq uint64
	for _, r := range n.ReportsFor(check) {
		if r.Checker == n.ID() {
			seq = r.Sequence
		}
	}
	if list := h[key]; len(list) > 0 && list[len(list)-1].seq == seq {
		return // unchanged: no new sequence
	}
	if list := h[key]; len(list) > 0 {
		list[len(list)-1].until = now
	}
	h[key] = append(h[key], published{seq: seq, entry: e, from: now})
}

// stale returns why a report a location counts as fresh now is stale, or "": the entry it
// holds must have been the checker's current one at some time within the window.
func (h history) stale(check string, r quorum.Report, now time.Time) string {
	for _, p := range h[r.Checker+"/"+check] {
		if p.seq != r.Sequence {
			continue
		}
		if statusOf(r) != p.entry.Status || r.Reason != p.entry.Reason || r.Latency != p.entry.Latency {
			return fmt.Sprintf("report %+v, published %+v", r, p.entry)
		}
		if !p.until.IsZero() && p.until.Before(now.Add(-window)) {
			return fmt.Sprintf("superseded %v ago", now.Sub(p.until))
		}
		return ""
	}
	return fmt.Sprintf("seq %d was never published", r.Sequence)
}

// TestAsymmetricCutAndLoss: r1 hears r2 but r2 does not hear r1, and every link loses 20% of
// its packets. For two simulated minutes, checked every half second: no location counts a
// stale report, and the healthy endpoint is never without a fresh report, nor reported
// anything but healthy, anywhere.
func TestAsymmetricCutAndLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1", "r2", "r3"}, checkers: 3, locations: 1})
		defer c.close()
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		h := history{}
		checkers, locations := c.with(RoleChecker), c.with(RoleLocation)
		for _, ch := range checkers {
			h.publish(t, ch, "ok", Entry{Status: checker.StatusHealthy, Consecutive: 3})
			h.publish(t, ch, "flappy", Entry{Status: checker.StatusHealthy})
		}
		time.Sleep(5 * time.Second)
		if err := c.net.CutOneWay("r2", "r1"); err != nil {
			t.Fatal(err)
		}
		if err := c.net.SetLossAll(20); err != nil {
			t.Fatal(err)
		}
		minFresh := map[string]int{}
		var checks, staleSeen int
		for tick := 0; tick < 240; tick++ {
			time.Sleep(500 * time.Millisecond)
			if tick%14 == 0 { // every 7 s, one checker flips its flappy status
				ch := checkers[(tick/14)%len(checkers)]
				status := checker.StatusUnhealthy
				if statusAt(ch, "flappy", ch.ID()) == checker.StatusUnhealthy {
					status = checker.StatusHealthy
				}
				h.publish(t, ch, "flappy", Entry{Status: status, Reason: fmt.Sprintf("tick %d", tick)})
			}
			now := time.Now()
			for _, l := range locations {
				fresh := 0
				for check, rs := range l.Reports() {
					for _, r := range rs {
						if !r.Fresh(now, window) {
							staleSeen++
							continue
						}
						checks++
						if why := h.stale(check, r, now); why != "" {
							t.Fatalf("at %s, %s counts %s's report of %s: %s", now.Format(time.TimeOnly), l.ID(), r.Checker, check, why)
						}
						if check == "ok" {
							fresh++
							if !r.Healthy {
								t.Fatalf("%s: healthy endpoint reported unhealthy by %s", l.ID(), r.Checker)
							}
						}
					}
				}
				if v, ok := minFresh[l.ID()]; !ok || fresh < v {
					minFresh[l.ID()] = fresh
				}
				if fresh == 0 {
					t.Fatalf("%s: the healthy endpoint has no fresh report", l.ID())
				}
			}
		}
		t.Logf("%d fresh reports checked, %d stale ones not counted; fewest fresh reports of the healthy check per location: %v", checks, staleSeen, minFresh)
	})
}
