package gossip

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vigil-dns/vigil/checker"
)

// memberlistUserMsg is memberlist's message type byte for a user message.
const memberlistUserMsg = 8

var otherKey = []byte("another-key-0123456789abcdefghi!")

// TestWrongKeyRefused: a node with the wrong key cannot join, and neither it nor a plaintext
// packet can put a report into a location's table. The same plaintext packet does land in an
// insecure pool, which shows the test can fail.
func TestWrongKeyRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1", "r2"}, checkers: 1, locations: 1})
		defer c.close()
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		loc := c.node("r2-l0")

		intruder := c.add("intruder", "r1", RoleChecker, func(cfg *Config) { cfg.Keys = [][]byte{otherKey} })
		if err := intruder.Publish("api", Entry{Status: checker.StatusUnhealthy, Reason: "forged"}); err != nil {
			t.Fatal(err)
		}
		if _, err := intruder.Join(loc.Addr()); err == nil {
			t.Error("a node with the wrong key joined")
		}
		noKey := c.add("plaintext", "r1", RoleChecker, func(cfg *Config) { cfg.Keys = nil; cfg.Insecure = true })
		if _, err := noKey.Join(loc.Addr()); err == nil {
			t.Error("a node with no key joined")
		}

		forged := append([]byte{memberlistUserMsg}, encodeDelta(delta{
			header: header{checker: "forger", gen: 1, seq: 1, beat: 1}, op: opSet, check: "api",
			entry: Entry{Status: checker.StatusUnhealthy}})...)
		raw, err := c.net.NewTransport("r1")
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			if _, err := raw.WriteTo(forged, loc.Addr()); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(30 * time.Second)
		for k := range nodeEntries(loc) {
			if k[0] == "intruder" || k[0] == "forger" || k[0] == "plaintext" {
				t.Errorf("location holds a report from %s", k[0])
			}
		}
		for _, m := range loc.Members() {
			if m.ID == "intruder" || m.ID == "plaintext" {
				t.Errorf("location counts %s as a member", m.ID)
			}
		}
		if n := len(intruder.Members()); n != 1 {
			t.Errorf("intruder sees %d members, want only itself", n)
		}
	})
}

// TestPlaintextInjectionLandsInInsecurePool is the control of TestWrongKeyRefused.
func TestPlaintextInjectionLandsInInsecurePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1"}, locations: 1,
			tune: func(cfg *Config) { cfg.Keys = nil; cfg.Insecure = true }})
		defer c.close()
		loc := c.node("r1-l0")
		raw, err := c.net.NewTransport("r1")
		if err != nil {
			t.Fatal(err)
		}
		forged := append([]byte{memberlistUserMsg}, encodeDelta(delta{
			header: header{checker: "forger", gen: 1, seq: 1, beat: 1}, op: opSet, check: "api",
			entry: Entry{Status: checker.StatusUnhealthy}})...)
		if _, err := raw.WriteTo(forged, loc.Addr()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, 10*time.Millisecond, "forged report lands", func() bool {
			return statusAt(loc, "api", "forger") == checker.StatusUnhealthy
		})
	})
}

// TestKeyRotation: install, use, remove a new key on every node without a restart; gossip
// keeps flowing, a node with only the old key is refused, one with the new key joins.
func TestKeyRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1", "r2"}, checkers: 1, locations: 1})
		defer c.close()
		waitFor(t, 30*time.Second, 100*time.Millisecond, "pool converges", c.converged)
		for _, step := range []func(*Pool) error{
			func(n *Pool) error { return n.InstallKey(otherKey) },
			func(n *Pool) error { return n.UseKey(otherKey) },
			func(n *Pool) error { return n.RemoveKey(testKey) },
		} {
			for _, n := range c.nodes {
				if err := step(n); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2 * time.Second)
		}
		for _, n := range c.nodes {
			primary, all := n.Keys()
			if !bytes.Equal(primary, otherKey) || len(all) != 1 {
				t.Fatalf("%s: keyring not rotated", n.ID())
			}
		}
		if err := c.nodes[0].RemoveKey(otherKey); err == nil || !strings.Contains(err.Error(), "primary") {
			t.Errorf("removing the primary key: %v", err)
		}
		if err := c.node("r1-c0").Publish("api", Entry{Status: checker.StatusHealthy}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Second, 10*time.Millisecond, "report after rotation", func() bool {
			return statusAt(c.node("r2-l0"), "api", "r1-c0") == checker.StatusHealthy
		})
		if !c.converged() {
			t.Error("pool split by the rotation")
		}
		old := c.add("old", "r1", RoleLocation, func(cfg *Config) { cfg.Seeds = nil })
		if _, err := old.Join(c.nodes[0].Addr()); err == nil {
			t.Error("a node with the removed key joined")
		}
		fresh := c.add("fresh", "r2", RoleLocation, func(cfg *Config) { cfg.Keys = [][]byte{otherKey}; cfg.Seeds = nil })
		if _, err := fresh.Join(c.nodes[0].Addr()); err != nil {
			t.Errorf("a node with the new key: %v", err)
		}
	})
}

// TestBadMessagesDroppedAndCounted: malformed, oversized and unknown messages are dropped and
// counted by reason, never a panic, and leave the table as it was.
func TestBadMessagesDroppedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, spec{regions: []string{"r1"}, locations: 1})
		defer c.close()
		n := c.node("r1-l0")
		d := (*delegate)(n)
		good := encodeDelta(delta{header: header{checker: "c", gen: 1, seq: 1, beat: 1}, op: opSet,
			check: "api", entry: Entry{Status: checker.StatusHealthy}})
		huge := encodeDelta(delta{header: header{checker: "c", gen: 1, seq: 2, beat: 1}, op: opSet,
			check: "api", entry: Entry{Status: checker.StatusHealthy}})
		huge = append(huge, make([]byte, MaxDeltaSize)...)
		for _, b := range [][]byte{nil, {1}, {9, 1}, {wireV1, 77}, good[:len(good)-1], append(good, 0), huge} {
			d.NotifyMsg(b)
		}
		d.MergeRemoteState([]byte{wireV1, byte(kindState), 200}, false)
		d.MergeRemoteState(good, false)
		for _, tc := range []struct {
			kind, reason string
			want         float64
		}{
			{"invalid", reasonMalformed, 3},
			{"invalid", reasonVersion, 1},
			{"delta", reasonMalformed, 2},
			{"delta", reasonOversized, 1},
			{"state", reasonMalformed, 1},
			{"delta", reasonRole, 1},
		} {
			if got := testutil.ToFloat64(n.m.dropped.WithLabelValues(tc.kind, tc.reason)); got != tc.want {
				t.Errorf("dropped{kind=%s,reason=%s} = %v, want %v", tc.kind, tc.reason, got, tc.want)
			}
		}
		if r := nodeEntries(n); len(r) != 0 {
			t.Errorf("table holds %v after bad messages only", r)
		}
		d.NotifyMsg(good)
		if got := statusAt(n, "api", "c"); got != checker.StatusHealthy {
			t.Errorf("a good delta after bad ones: status %v", got)
		}
	})
}
