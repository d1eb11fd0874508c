package gossip

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vigil-dns/vigil/checker"
)

// fleetChecks is how many checks a fleet reports on, whatever its size: each check is
// probed by 2 checkers in each of the 3 regions, so every table holds 180 reports and what
// grows with the pool is the pool itself.
const fleetChecks = 30

// fleet is one in-process pool of n nodes over three regions: two thirds checkers, one
// third locations.
func fleet(t *testing.T, n int) *cluster {
	t.Helper()
	c := newCluster(t, spec{regions: []string{"r1", "r2", "r3"}})
	for i := range n {
		region := fmt.Sprintf("r%d", i%3+1)
		if i%3 == 2 {
			c.add(fmt.Sprintf("l%03d", i), region, RoleLocation, nil)
		} else {
			c.add(fmt.Sprintf("c%03d", i), region, RoleChecker, nil)
		}
		time.Sleep(20 * time.Millisecond) // nodes start one after another, as in a rollout
	}
	start := time.Now()
	waitFor(t, 5*time.Minute, time.Second, fmt.Sprintf("%d nodes converge", n), c.converged)
	t.Logf("%d nodes converged in %v (simulated)", n, time.Since(start))
	byRegion := map[string][]*Pool{}
	for _, ch := range c.with(RoleChecker) {
		byRegion[ch.cfg.Region] = append(byRegion[ch.cfg.Region], ch)
	}
	for k := range fleetChecks {
		for _, chs := range byRegion {
			for j := range 2 {
				ch := chs[(k*2+j)%len(chs)]
				if err := ch.Publish(fmt.Sprintf("check-%d", k), Entry{Status: checker.StatusHealthy, Consecutive: 3, Latency: 12 * time.Millisecond, Reason: "http 200"}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return c
}

// sentBytes sums the bytes every node of the pool sent.
func (c *cluster) sentBytes() float64 {
	total := 0.0
	for _, n := range c.nodes {
		total += testutil.ToFloat64(n.m.sentBytes)
	}
	return total
}

// TestFleetGrowth: goroutines and heap per node stay flat, within a constant, as the pool
// grows from 10 to 50 to 200 nodes in-process: no per-peer goroutine, no per-peer buffer.
func TestFleetGrowth(t *testing.T) {
	sizes := []int{10, 50, 200}
	if s := os.Getenv("VIGIL_FLEET_SIZES"); s == "200" {
		sizes = []int{200}
	}
	if testing.Short() {
		sizes = []int{10, 50}
	}
	type figure struct{ goroutines, heap float64 }
	figures := map[int]figure{}
	for _, size := range sizes {
		synctest.Test(t, func(t *testing.T) {
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			g0 := runtime.NumGoroutine()
			c := fleet(t, size)
			defer c.close()
			waitFor(t, 5*time.Minute, time.Second, "relay queues drain", func() bool {
				for _, n := range c.nodes {
					if n.deltas.NumQueued() > 0 {
						return false
					}
				}
				return true
			})
			time.Sleep(5 * time.Second) // steady state: heartbeats only
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			f := figure{
				goroutines: float64(runtime.NumGoroutine()-g0) / float64(size),
				heap:       float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(size),
			}
			figures[size] = f
			t.Logf("%d nodes: %.1f goroutines per node, %.0f KiB heap per node", size, f.goroutines, f.heap/1024)
		})
	}
	small, large := figures[sizes[0]], figures[sizes[len(sizes)-1]]
	if large.goroutines > small.goroutines+1 {
		t.Errorf("goroutines per node grew from %.1f to %.1f", small.goroutines, large.goroutines)
	}
	// Every node knows every member (memberlist) and every checker's row header: that much
	// grows with the pool. A per-peer buffer or queue would cost far more than 4 KiB a peer.
	slope := (large.heap - small.heap) / float64(sizes[len(sizes)-1]-sizes[0])
	t.Logf("heap per node grows by %.2f KiB per member", slope/1024)
	if slope > 4096 {
		t.Errorf("heap per node grows by %.0f bytes per member, more than 4 KiB", slope)
	}
}

// TestMeasurePropagation measures, in simulated time under synctest, how long a status
// change takes to reach every node at 10, 50 and 200 nodes, and the bytes per second per
// node in steady state and under churn. It only runs with VIGIL_MEASURE=1; the figures are
// in BENCHMARKS.md.
func TestMeasurePropagation(t *testing.T) {
	if os.Getenv("VIGIL_MEASURE") == "" {
		t.Skip("set VIGIL_MEASURE=1 to measure")
	}
	for _, size := range []int{10, 50, 200} {
		synctest.Test(t, func(t *testing.T) {
			c := fleet(t, size)
			defer c.close()
			time.Sleep(30 * time.Second)
			rng := rand.New(rand.NewPCG(uint64(size), 1))
			checkers := c.with(RoleChecker)
			var took []time.Duration
			for i := range 50 {
				ch := checkers[rng.IntN(len(checkers))]
				status := checker.StatusUnhealthy
				if statusAt(ch, "check-0", ch.ID()) == checker.StatusUnhealthy {
					status = checker.StatusHealthy
				}
				if err := ch.Publish("check-0", Entry{Status: status, Reason: fmt.Sprintf("change %d", i)}); err != nil {
					t.Fatal(err)
				}
				took = append(took, waitFor(t, 30*time.Second, 10*time.Millisecond, "change reaches every node", func() bool {
					for _, n := range c.nodes {
						if statusAt(n, "check-0", ch.ID()) != status {
							return false
						}
					}
					return true
				}))
				time.Sleep(2 * time.Second)
			}
			slices.Sort(took)
			p50, p99 := took[len(took)/2], took[(len(took)*99+99)/100-1]

			b0 := c.sentBytes()
			time.Sleep(time.Minute)
			steady := (c.sentBytes() - b0) / float64(size) / 60

			// Churn: every 3 s one checker leaves and a new one joins and reports.
			b0 = c.sentBytes()
			live := len(c.nodes)
			events := min(20, len(checkers)/2)
			for i := range events {
				c.stop[checkers[i].ID()]()
				n := c.add(fmt.Sprintf("new%03d", i), fmt.Sprintf("r%d", i%3+1), RoleChecker, nil)
				if err := n.Publish(fmt.Sprintf("check-%d", i), Entry{Status: checker.StatusHealthy}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(3 * time.Second)
			}
			churn := (c.sentBytes() - b0) / float64(live) / (3 * float64(events))
			t.Logf("%d nodes: change reaches every node p50 %v p99 %v (simulated, %d changes); sent %.0f B/s per node steady, %.0f B/s per node under churn",
				size, p50, p99, len(took), steady, churn)
		})
	}
}
