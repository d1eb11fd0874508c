package abuse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/gossip"
)

var newPoolKey = []byte("abuse-pool-key-2-0123456789abcd!")

// keyNode runs a gossip node on loopback with its own registry until the test ends.
func keyNode(t *testing.T, wg *sync.WaitGroup, id string, roles gossip.Roles, keys [][]byte, seeds ...string) (*gossip.Pool, *prometheus.Registry, context.CancelFunc) {
	t.Helper()
	reg := prometheus.NewRegistry()
	n, err := gossip.New(gossip.Config{
		ID: id, Region: "r1", Roles: roles, Version: "abuse", Keys: keys, Profile: gossip.ProfileLocal,
		BindAddr: "127.0.0.1", Seeds: seeds, HeartbeatInterval: 100 * time.Millisecond,
		RejoinInterval: 500 * time.Millisecond, Logger: logger(), Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = n.Run(ctx)
	}()
	t.Cleanup(cancel)
	return n, reg, cancel
}

// unauthenticated sums vigil_gossip_inbound_refused_total{reason="unauthenticated"} of regs.
func unauthenticated(t *testing.T, regs ...*prometheus.Registry) int {
	t.Helper()
	sum := 0
	for _, reg := range regs {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "vigil_gossip_inbound_refused_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "reason" && l.GetValue() == "unauthenticated" {
						sum += int(m.GetCounter().GetValue())
					}
				}
			}
		}
	}
	return sum
}

// TestAbuseRetiredGossipKey rotates the key of a running pool (2 checkers, 2 locations, real
// sockets) with gossip's keyring operations, as `vigil keyring` does: install the new key on
// every node, use it, remove the old one, while a checker publishes a new report every 20ms.
// Every report must reach both locations, and no member's message may be refused during the
// rotation. Then a node with the retired key tries to join and push a forged report, and an
// operator with the retired key asks the pool to install a key of its own. The control: the
// same node joined with the same key before the rotation.
func TestAbuseRetiredGossipKey(t *testing.T) {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after every node's cancel, which are registered later
	old := [][]byte{poolKey}
	loc1, r1, _ := keyNode(t, &wg, "loc1", gossip.RoleLocation, old)
	loc2, r2, _ := keyNode(t, &wg, "loc2", gossip.RoleLocation, old, loc1.Addr())
	chk1, r3, _ := keyNode(t, &wg, "chk1", gossip.RoleChecker, old, loc1.Addr())
	_, r4, _ := keyNode(t, &wg, "chk2", gossip.RoleChecker, old, loc1.Addr())
	op, _, _ := keyNode(t, &wg, "operator", gossip.RoleControl, old, loc1.Addr())
	if !settled(20*time.Second, func() bool { return len(loc1.Members()) == 5 && len(loc2.Members()) == 5 && len(op.Members()) == 5 }) {
		t.Fatal("the pool did not form")
	}
	// The control: a node with the key in use joins.
	ctl, _, leave := keyNode(t, &wg, "ctl-old", gossip.RoleChecker, old)
	ctlJoined, _ := ctl.Join(loc1.Addr())
	leave()
	if !settled(15*time.Second, func() bool {
		for _, n := range []*gossip.Pool{loc1, loc2, chk1, op} {
			if slices.ContainsFunc(n.Members(), func(m gossip.Member) bool { return m.ID == "ctl-old" }) {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the control node did not leave")
	}

	// A checker publishes a new report every 20ms; each location's latest is watched.
	var published atomic.Int64
	stop := make(chan struct{})
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if err := chk1.Publish("api", gossip.Entry{Status: checker.StatusHealthy, Consecutive: uint32(i), Reason: strconv.Itoa(i)}); err == nil {
				published.Store(int64(i))
			}
		}
	}()
	latest := func(n *gossip.Pool) int64 {
		for _, r := range n.ReportsFor("api") {
			if r.Checker == "chk1" {
				i, _ := strconv.ParseInt(r.Reason, 10, 64) // the reason carries the count
				return i
			}
		}
		return 0
	}
	caughtUp := func() bool {
		p := published.Load()
		return p > 0 && latest(loc1) >= p && latest(loc2) >= p
	}
	if !settled(10*time.Second, caughtUp) {
		t.Fatal("the locations do not follow the checker")
	}
	before := unauthenticated(t, r1, r2, r3, r4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	steps := []struct {
		op  gossip.KeyringOp
		key []byte
	}{{gossip.KeyringInstall, newPoolKey}, {gossip.KeyringUse, newPoolKey}, {gossip.KeyringRemove, poolKey}}
	for _, s := range steps {
		answers, err := op.Keyring(ctx, s.op, s.key, time.Second)
		if err != nil {
			t.Fatalf("keyring %s: %v", s.op, err)
		}
		for _, id := range []string{"loc1", "loc2", "chk1", "chk2"} {
			if a, ok := answers[id]; !ok || a.Error != "" {
				t.Fatalf("keyring %s at %s: answered %v, %s", s.op, id, ok, a.Error)
			}
		}
		// The pool keeps delivering between steps.
		time.Sleep(300 * time.Millisecond)
	}
	lag := 0
	if !waitFor(5*time.Second, caughtUp) {
		lag = int(published.Load() - min(latest(loc1), latest(loc2)))
	}
	close(stop)
	<-pubDone
	refusedDuring := unauthenticated(t, r1, r2, r3, r4) - before
	answers, err := op.Keyring(ctx, gossip.KeyringList, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := gossip.KeyFingerprint(newPoolKey)
	for id, a := range answers {
		if a.Primary != want || !slices.Equal(a.Keys, []string{want}) {
			t.Errorf("%s holds keys %v (primary %s), want only %s", id, a.Keys, a.Primary, want)
		}
	}
	t.Logf("rotation: %d reports published, both locations at the latest (behind by %d), member messages refused during it %d", published.Load(), lag, refusedDuring)
	if lag != 0 || refusedDuring != 0 {
		t.Errorf("rotation lost reports: locations %d behind, %d member messages refused", lag, refusedDuring)
	}

	// The retired key: a checker joins and publishes a forged report; an operator asks the
	// pool to install its own key.
	const joins = 10
	retired, _, _ := keyNode(t, &wg, "retired", gossip.RoleChecker, old)
	if err := retired.Publish("api", gossip.Entry{Status: checker.StatusUnhealthy, Reason: "forged"}); err != nil {
		t.Fatal(err)
	}
	joined := 0
	for range joins {
		if k, err := retired.Join(loc1.Addr(), chk1.Addr()); err == nil && k > 0 {
			joined++
		}
	}
	evilOp, _, _ := keyNode(t, &wg, "retired-op", gossip.RoleControl, old)
	_, _ = evilOp.Join(loc1.Addr())
	ectx, ecancel := context.WithTimeout(context.Background(), 3*time.Second)
	evilAnswers, _ := evilOp.Keyring(ectx, gossip.KeyringInstall, wrongKey, 500*time.Millisecond)
	ecancel()
	time.Sleep(time.Second)
	members, rows := foreign(loc1, []string{"retired", "retired-op"})
	m2, rw2 := foreign(loc2, []string{"retired", "retired-op"})
	members, rows = members+m2, rows+rw2
	installed := 0
	after, _ := op.Keyring(ctx, gossip.KeyringList, nil, time.Second)
	for _, a := range after {
		if slices.Contains(a.Keys, gossip.KeyFingerprint(wrongKey)) {
			installed++
		}
	}
	row(t, fmt.Sprintf("a retired gossip key: the pool (2 checkers, 2 locations, loopback) rotates install/use/remove with gossip's keyring operations while a checker publishes every 20ms (%d reports, both locations at the latest, behind by %d, member messages refused %d); then a node with the retired key joins and pushes a forged report, and an operator with it asks the pool to install its own key", published.Load(), lag, refusedDuring),
		fmt.Sprintf("%d joins, 1 keyring request", joins),
		fmt.Sprintf("joins %d, members admitted %d, rows accepted %d, nodes answering the request %d, nodes holding the intruder's key %d (control, the same key before the rotation: the join reached %d node)", joined, members, rows, len(evilAnswers), installed, ctlJoined))
	if joined != 0 || members != 0 || rows != 0 || len(evilAnswers) != 0 || installed != 0 {
		t.Errorf("the retired key got through: %d joins, %d members, %d rows, %d answers, %d installs", joined, members, rows, len(evilAnswers), installed)
	}
	if ctlJoined == 0 {
		t.Error("control: a node with the key in use could not join")
	}

	// The control of the rotation: one checker alone starts encrypting with a key the pool
	// has not installed. Its messages are refused and its reports stop arriving, as the
	// measures above would show of a rotation that lost reports.
	third := []byte("abuse-pool-key-3-0123456789abcd!")
	if err := chk1.InstallKey(third); err != nil {
		t.Fatal(err)
	}
	if err := chk1.UseKey(third); err != nil {
		t.Fatal(err)
	}
	base := unauthenticated(t, r1, r2, r3, r4)
	for i := range 20 {
		_ = chk1.Publish("api", gossip.Entry{Status: checker.StatusHealthy, Consecutive: uint32(100000 + i)})
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	ctlRefused := unauthenticated(t, r1, r2, r3, r4) - base
	t.Logf("control, a checker alone on a key the pool lacks: %d of its messages refused, locations at %d and %d of 100019", ctlRefused, latest(loc1), latest(loc2))
	if ctlRefused == 0 || latest(loc1) >= 100019 {
		t.Error("control: a checker on a key the pool lacks still got through, so the rotation's measures cannot fail")
	}
}
