package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/gossip"
)

// fakeChecker starts a gossip checker that joins seed: reports are published by hand.
func fakeChecker(t testing.TB, id, region, seed string) *gossip.Pool {
	t.Helper()
	g := newFakeChecker(t, id, region, seed)
	runPool(t, g)
	return g
}

// newFakeChecker creates a gossip checker that joins seed once run (runPool).
func newFakeChecker(t testing.TB, id, region, seed string) *gossip.Pool {
	t.Helper()
	g, err := gossip.New(gossip.Config{ID: id, Region: region, Roles: gossip.RoleChecker, Keys: [][]byte{testKey},
		Profile: gossip.ProfileLocal, BindAddr: "127.0.0.1", Seeds: []string{seed}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// runPool runs g (its joins, heartbeats and row repairs) until the test ends.
func runPool(t testing.TB, g *gossip.Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = g.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Every verdict DNS serves is the verdict the reads (Verdicts, the status API, the sim's
// sampler) return, even when the configuration changes while reports arrive, as it does under
// steady control-plane writes. Found by `vigil sim chaos` in the full pass of old: an
// evaluation that overlapped a configuration change gave DNS its verdicts and the reads
// nothing, so DNS briefly served a verdict no read ever saw.
func TestVerdictsInstalledDespiteConfigChanges(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "loc", "us-east", RoleLocation, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.DNSAddr, cfg.HTTPAddr, cfg.Static = "127.0.0.1:0", "off", doc
	cfg.Logger, cfg.Registerer = testLogger(), newReg()
	n := mustNew(t, cfg)
	t.Cleanup(n.Close)
	// The test steps the verdict engine itself, so the node does not run; its pool does, as
	// in a running node: it repairs the rows it holds behind a gap. Without it, the
	// checker's row was complete only if the checker's first word reached the location before
	// any delta went missing, and its reports counted only then: on a loaded machine they
	// often never did.
	runPool(t, n.pool)
	// The checker has reports before it joins, as a checker usually has when a location
	// hears of it: the deltas of one check replace each other in its queue, so the
	// location's row of it has a gap from the start, which only a repair fills.
	chk := newFakeChecker(t, "chk", "us-east", n.GossipAddr())
	for i := range 3 {
		if err := chk.Publish(doc.Checks[0].ID, gossip.Entry{Status: checker.Status(1 + i%2)}); err != nil {
			t.Fatal(err)
		}
	}
	runPool(t, chk)

	// Configuration changes as fast as they come, each a new index of the same document, and
	// the checker flips a report every millisecond.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := uint64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := state.NewState(doc)
			s.Index = i
			n.setConfig(s, state.SourceControlPlane)
		}
	})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			c := doc.Checks[i%len(doc.Checks)]
			_ = chk.Publish(c.ID, gossip.Entry{Status: checker.Status(1 + i/len(doc.Checks)%2)})
		}
	})
	defer func() { close(stop); wg.Wait() }()
	// At least 300 rounds, and on until the checker's reports have reached the verdicts (its
	// row needs a join and a repair first; on a loaded machine that took over the 300 rounds'
	// second once), at most 15s.
	unhealthy := 0
	deadline := time.Now().Add(15 * time.Second)
	for round := 0; round < 300 || unhealthy == 0 && time.Now().Before(deadline); round++ {
		n.step()
		v, err := n.Verdicts()
		if err != nil || len(v) != len(doc.Checks) {
			t.Fatalf("round %d: %d verdicts of %d checks readable (%v)", round, len(v), len(doc.Checks), err)
		}
		for id, e := range v {
			if e.ServedAsHealthy != n.dns.Served(id) {
				t.Fatalf("round %d: %s: the reads say served %v (%s), DNS serves %v", round, id, e.ServedAsHealthy, e.Sentence, n.dns.Served(id))
			}
			if !e.ServedAsHealthy {
				unhealthy++
			}
		}
		time.Sleep(time.Millisecond)
	}
	if unhealthy == 0 {
		t.Fatal("no verdict was ever unhealthy: the checker's reports never reached the verdicts")
	}
}
