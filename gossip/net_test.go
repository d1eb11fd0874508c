package gossip

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vigil-dns/vigil/checker"
)

// TestRealSockets: three nodes on 127.0.0.1 over memberlist's own NetTransport (UDP and TCP),
// encrypted: they join, a report spreads, and bytes are counted both ways.
func TestRealSockets(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var nodes []*Pool
	regs := []*prometheus.Registry{}
	for i, spec := range []struct {
		id, region string
		roles      Roles
	}{{"eu-c0", "eu", RoleChecker}, {"us-l0", "us", RoleLocation}, {"ap-l0", "ap", RoleLocation | RoleChecker}} {
		reg := prometheus.NewRegistry()
		cfg := Config{ID: spec.id, Region: spec.region, Roles: spec.roles, Version: "test",
			BindAddr: "127.0.0.1", BindPort: 0, Keys: [][]byte{testKey}, Profile: ProfileLocal,
			HeartbeatInterval: 200 * time.Millisecond, Registerer: reg, Logger: testLogger()}
		if i > 0 {
			cfg.Seeds = []string{nodes[0].Addr()}
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		regs = append(regs, reg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, 10*time.Second, 20*time.Millisecond, "three nodes join over sockets", func() bool {
		for _, n := range nodes {
			if len(n.Members()) != 3 {
				return false
			}
		}
		return true
	})
	if err := nodes[0].Publish("api", Entry{Status: checker.StatusUnhealthy, Reason: "http 503"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, 20*time.Millisecond, "report spreads over sockets", func() bool {
		for _, n := range nodes[1:] {
			rs := n.ReportsFor("api")
			if len(rs) != 1 || rs[0].Healthy || rs[0].Reason != "http 503" || rs[0].Region != "eu" ||
				!rs[0].Fresh(time.Now(), 5*time.Second) {
				return false
			}
		}
		return true
	})
	if got := nodes[1].Checkers(); len(got["eu"]) != 1 || len(got["ap"]) != 1 || len(got["us"]) != 0 {
		t.Errorf("live checkers by region: %v", got)
	}
	for i, n := range nodes {
		if testutil.ToFloat64(n.m.sentBytes) == 0 || testutil.ToFloat64(n.m.receivedBytes) == 0 {
			t.Errorf("%s: no bytes counted", n.ID())
		}
		if got := testutil.ToFloat64(n.m.members.WithLabelValues("eu")); got != 1 {
			t.Errorf("%s: members{region=eu} = %v", n.ID(), got)
		}
		if _, err := regs[i].Gather(); err != nil {
			t.Error(err)
		}
	}
}
