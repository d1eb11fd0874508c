package gossip

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/regions"
)

// testKey is the pool key of the in-process clusters.
var testKey = []byte("vigil-test-key-0123456789abcdef!")

// cluster is an in-process pool on a simulated network, for use inside a synctest bubble.
type cluster struct {
	t     testing.TB
	net   *regions.Network
	nodes []*Pool
	regs  map[string]*prometheus.Registry
	stop  map[string]context.CancelFunc
	wg    sync.WaitGroup
}

// spec says how many checkers and locations each region gets.
type spec struct {
	regions   []string
	checkers  int // per region
	locations int // per region
	tune      func(*Config)
}

func testLogger() *slog.Logger {
	if os.Getenv("VIGIL_GOSSIP_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newCluster(t testing.TB, s spec) *cluster {
	t.Helper()
	nw, err := regions.NewNetwork(1, s.regions...)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, net: nw, regs: map[string]*prometheus.Registry{}, stop: map[string]context.CancelFunc{}}
	for _, r := range s.regions {
		for i := range s.checkers {
			c.add(fmt.Sprintf("%s-c%d", r, i), r, RoleChecker, s.tune)
		}
		for i := range s.locations {
			c.add(fmt.Sprintf("%s-l%d", r, i), r, RoleLocation, s.tune)
		}
	}
	return c
}

// add starts one node, seeded with the first node of the cluster.
func (c *cluster) add(id, region string, roles Roles, tune func(*Config)) *Pool {
	c.t.Helper()
	tr, err := c.net.NewTransport(region)
	if err != nil {
		c.t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cfg := Config{ID: id, Region: region, Roles: roles, Version: "test", Transport: tr,
		Keys: [][]byte{testKey}, Registerer: reg, Logger: testLogger(), HeartbeatInterval: time.Second}
	if len(c.nodes) > 0 {
		cfg.Seeds = []string{c.nodes[0].Addr()}
	}
	if tune != nil {
		tune(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop[id] = cancel
	c.regs[id] = reg
	c.nodes = append(c.nodes, n)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := n.Run(ctx); err != nil {
			c.t.Error(err)
		}
	}()
	return n
}

// close stops every node and waits for them, then lets memberlist's goroutines, which wait on
// timers after Shutdown, finish: a synctest bubble's clock stops when its main goroutine ends.
func (c *cluster) close() {
	for _, cancel := range c.stop {
		cancel()
	}
	c.wg.Wait()
	time.Sleep(time.Minute)
	synctest.Wait()
}

func (c *cluster) node(id string) *Pool {
	for _, n := range c.nodes {
		if n.ID() == id {
			return n
		}
	}
	c.t.Fatalf("no node %s", id)
	return nil
}

// with returns the nodes that have all of roles.
func (c *cluster) with(roles Roles) []*Pool {
	var out []*Pool
	for _, n := range c.nodes {
		if n.cfg.Roles.Has(roles) {
			out = append(out, n)
		}
	}
	return out
}

// waitFor polls cond every step until it holds or limit passes, and returns how long it took.
func waitFor(t testing.TB, limit, step time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for i := 0; time.Since(start) <= limit && i < 100000; i++ {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(step)
	}
	t.Fatalf("%s: not within %v", what, limit)
	return 0
}

// converged reports whether every node sees every node alive.
func (c *cluster) converged() bool {
	for _, n := range c.nodes {
		if len(n.Members()) != len(c.nodes) {
			return false
		}
	}
	return true
}

// freshCheckers returns the checkers whose report of check loc counts as fresh now.
func freshCheckers(loc *Pool, check string, window time.Duration) []string {
	now := time.Now()
	var out []string
	for _, r := range loc.ReportsFor(check) {
		if r.Fresh(now, window) {
			out = append(out, r.Checker)
		}
	}
	sort.Strings(out)
	return out
}
