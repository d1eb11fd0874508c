package gossip

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vigil-dns/vigil/checker"
)

// loopPool is a pool of real memberlist nodes on 127.0.0.1 (UDP and TCP, encrypted, LAN
// timing): one checker that reports on many checks, and locations.
type loopPool struct {
	t       *testing.T
	tune    func(*Config)
	checker *Pool
	locs    []*Pool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// newLoopPool starts a checker holding checks reports (published before it joins anyone, so
// that they travel as state, not as deltas) and locations that join it.
func newLoopPool(t *testing.T, checks, locations int, tune func(*Config)) *loopPool {
	t.Helper()
	p := &loopPool{t: t, tune: tune}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.checker = p.start("c0", RoleChecker, nil)
	for i := range checks {
		if err := p.checker.Publish(fmt.Sprintf("check-%07d", i), measuredEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The row travels by anti-entropy, as it would to a location that was not there.
	p.checker.deltas.Reset()
	p.run(p.checker)
	for i := range locations {
		p.locs = append(p.locs, p.join(fmt.Sprintf("l%d", i)))
	}
	return p
}

// measuredEntry is check i's report: latencies and counts vary from check to check, as they
// do (memberlist compresses streams: identical reports would shrink to almost nothing).
func measuredEntry(i int) Entry {
	h := uint64(i) * 0x9e3779b97f4a7c15
	h ^= h >> 29
	return Entry{Status: checker.StatusHealthy, Consecutive: uint32(1 + h%10),
		Latency: time.Duration(1000+h%200000) * time.Microsecond, Reason: "http 200"}
}

// start creates a node on a free loopback port.
func (p *loopPool) start(id string, roles Roles, seeds []string) *Pool {
	p.t.Helper()
	cfg := Config{ID: id, Region: "r1", Roles: roles, Version: "test", BindAddr: "127.0.0.1",
		Keys: [][]byte{testKey}, Seeds: seeds, Logger: testLogger()}
	if p.tune != nil {
		p.tune(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	return n
}

func (p *loopPool) run(n *Pool) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := n.Run(p.ctx); err != nil {
			p.t.Error(err)
		}
	}()
}

// join starts a location seeded with the first location, or the checker when there is none.
func (p *loopPool) join(id string) *Pool {
	seed := p.checker.Addr()
	if len(p.locs) > 0 {
		seed = p.locs[0].Addr()
	}
	n := p.start(id, RoleLocation, []string{seed})
	p.run(n)
	return n
}

func (p *loopPool) close() {
	p.cancel()
	p.wg.Wait()
}

func (p *loopPool) nodes() []*Pool { return append([]*Pool{p.checker}, p.locs...) }

// sent returns the bytes each node sent so far.
func sentBy(nodes []*Pool) []float64 {
	out := make([]float64, len(nodes))
	for i, n := range nodes {
		out[i] = testutil.ToFloat64(n.m.sentBytes)
	}
	return out
}

// holdsRow reports whether loc holds the checker's row complete and equal in size.
func (p *loopPool) holdsRow(loc *Pool) bool {
	p.checker.mu.Lock()
	seq, want := p.checker.own.seq, len(p.checker.own.cells)
	p.checker.mu.Unlock()
	loc.mu.Lock()
	defer loc.mu.Unlock()
	r := loc.table.rows[p.checker.ID()]
	reports, _ := loc.table.Len()
	return r != nil && r.seq == seq && r.complete() && reports == want
}

// syncMode is one way of running the pool, measured side by side.
type syncMode struct {
	name string
	tune func(*Config)
}

// syncModes are the modes TestMeasureSync compares in one run: the current sync (wire
// version 2: push/pull carries row headers, a row is repaired by its changes since what the
// asker holds) and the whole-row sync (version 1: push/pull carries the checker's whole row,
// a repair the whole row), which every node can still speak.
func syncModes() []syncMode {
	return []syncMode{
		{name: "current", tune: nil},
		{name: "v1 (whole rows)", tune: func(c *Config) { c.legacySync = true }},
	}
}

// TestMeasureSync measures, with real memberlist nodes on loopback (LAN timing: 30 s
// push/pull, 1 s probes, 2 s heartbeats), what a checker's row of 1k, 10k and 100k checks
// costs a pool of one checker and two locations: bytes per node per second in steady state
// (nothing changes) over VIGIL_MEASURE_WINDOW (default 90s), and the time and bytes for a
// third location joining to hold the row complete. VIGIL_MEASURE_SIZES overrides the sizes
// (e.g. 1000000). It only runs with VIGIL_MEASURE=1; the figures are in BENCHMARKS.md.
func TestMeasureSync(t *testing.T) {
	if os.Getenv("VIGIL_MEASURE") == "" {
		t.Skip("set VIGIL_MEASURE=1 to measure")
	}
	sizes := []int{1000, 10000, 100000}
	if s := os.Getenv("VIGIL_MEASURE_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	window := 90 * time.Second
	if s := os.Getenv("VIGIL_MEASURE_WINDOW"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		window = d
	}
	for _, size := range sizes {
		// The modes run at the same time, each its own pool, over the same window.
		type result struct {
			mode         string
			synced       time.Duration
			checker, loc float64 // B/s per node, steady
			catchUp      time.Duration
			catchUpBytes float64
			failed       string
		}
		modes := syncModes()
		results := make([]result, len(modes))
		var wg sync.WaitGroup
		for i, m := range modes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := &results[i]
				res.mode = m.name
				start := time.Now()
				p := newLoopPool(t, size, 2, m.tune)
				defer p.close()
				if !poll(2*time.Minute, func() bool { return p.holdsRow(p.locs[0]) && p.holdsRow(p.locs[1]) }) {
					res.failed = "the locations did not get the row within 2m"
					return
				}
				res.synced = time.Since(start)
				// The joins' catch-up push/pulls (1, 2 and 4 s after) are over by then.
				time.Sleep(10 * time.Second)
				nodes := p.nodes()
				b0 := sentBy(nodes)
				time.Sleep(window)
				b1 := sentBy(nodes)
				res.checker = (b1[0] - b0[0]) / window.Seconds()
				res.loc = (b1[1] - b0[1] + b1[2] - b0[2]) / 2 / window.Seconds()

				b0 = sentBy(nodes)
				start = time.Now()
				late := p.join("l-late")
				p.locs = append(p.locs, late)
				if !poll(2*time.Minute, func() bool { return p.holdsRow(late) }) {
					res.failed = "the late location did not get the row within 2m"
					return
				}
				res.catchUp = time.Since(start)
				b1 = sentBy(nodes)
				for j := range nodes {
					res.catchUpBytes += b1[j] - b0[j]
				}
				res.catchUpBytes += testutil.ToFloat64(late.m.sentBytes)
			}()
		}
		wg.Wait()
		for _, r := range results {
			if r.failed != "" {
				t.Logf("%d checks, %s: %s", size, r.mode, r.failed)
				continue
			}
			t.Logf("%d checks, %s: row at both locations after %v; steady: checker %.0f B/s, location %.0f B/s (over %v); late location holds the row after %v, %.0f bytes sent by all nodes meanwhile",
				size, r.mode, r.synced.Round(time.Millisecond), r.checker, r.loc, window, r.catchUp.Round(time.Millisecond), r.catchUpBytes)
		}
	}
}

// poll checks cond every 10 ms until it holds or limit passes.
func poll(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for i := 0; i < 1<<20 && time.Now().Before(deadline); i++ {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
