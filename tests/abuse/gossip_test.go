package abuse

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/gossip"
)

// poolKey is the key of the pool under attack; wrongKey is the intruders'.
var (
	poolKey  = []byte("abuse-pool-key-0123456789abcdef!")
	wrongKey = []byte("intruder-key-0123456789abcdefgh!")
)

// recordingTransport is a real memberlist network transport that keeps a copy of every UDP
// packet its node sends: the bytes an eavesdropper on the wire would capture.
type recordingTransport struct {
	*memberlist.NetTransport
	mu      sync.Mutex
	packets [][]byte
}

// WriteTo implements memberlist.Transport, keeping a copy of the packet.
func (r *recordingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	r.record(b)
	return r.NetTransport.WriteTo(b, addr)
}

// WriteToAddress implements memberlist.NodeAwareTransport, keeping a copy of the packet.
func (r *recordingTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	r.record(b)
	return r.NetTransport.WriteToAddress(b, a)
}

// record keeps a copy of b; at most 2,000 packets.
func (r *recordingTransport) record(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.packets) < 2000 {
		r.packets = append(r.packets, slices.Clone(b))
	}
}

func (r *recordingTransport) captured() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.packets)
}

// gossipPool runs gossip nodes on loopback sockets until the test ends.
type gossipPool struct {
	t  *testing.T
	wg sync.WaitGroup
}

// start runs a node on 127.0.0.1 with keys (nil: no encryption), seeded with seeds. With
// record, its transport keeps every packet it sends.
func (p *gossipPool) start(id string, roles gossip.Roles, keys [][]byte, record bool, seeds ...string) (*gossip.Pool, *recordingTransport) {
	p.t.Helper()
	cfg := gossip.Config{
		ID: id, Region: "r1", Roles: roles, Version: "abuse", Keys: keys, Insecure: keys == nil,
		Profile: gossip.ProfileLocal, BindAddr: "127.0.0.1", Seeds: seeds,
		HeartbeatInterval: 100 * time.Millisecond, RejoinInterval: 500 * time.Millisecond, Logger: logger(),
	}
	var rec *recordingTransport
	if record {
		nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{"127.0.0.1"}, BindPort: 0})
		if err != nil {
			p.t.Fatal(err)
		}
		rec = &recordingTransport{NetTransport: nt}
		cfg.Transport = rec
	}
	n, err := gossip.New(cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := n.Run(ctx); err != nil {
			p.t.Errorf("%s: %v", id, err)
		}
	}()
	p.t.Cleanup(func() { cancel() })
	return n, rec
}

// foreign counts the members and the reports that n holds from any of the ids.
func foreign(n *gossip.Pool, ids []string) (members, rows int) {
	for _, m := range n.Members() {
		if slices.Contains(ids, m.ID) {
			members++
		}
	}
	for _, rs := range n.Reports() {
		for _, r := range rs {
			if slices.Contains(ids, r.Checker) {
				rows++
			}
		}
	}
	return members, rows
}

// replay sends every packet to addr over UDP from a fresh socket.
func replay(t *testing.T, packets [][]byte, addr string) int {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sent := 0
	for _, b := range packets {
		if _, err := conn.Write(b); err == nil {
			sent++
		}
		time.Sleep(time.Millisecond) // a flood would only fill the socket buffer
	}
	return sent
}

// TestAbuseGossipWrongKey: nodes with the wrong key and with no key try to join an encrypted
// pool (one checker, one location, real sockets) and to push their rows and heartbeats into
// it: by joining (memberlist's push/pull carries the whole table) and by replaying the UDP
// packets they gossip among themselves (deltas, heartbeats, membership), captured on the wire.
// The pool must admit no member and accept no row. The control replays the plaintext capture
// at a location of an unencrypted pool, where the rows do land.
func TestAbuseGossipWrongKey(t *testing.T) {
	pool := &gossipPool{t: t}
	keys := [][]byte{poolKey}
	loc, _ := pool.start("loc", gossip.RoleLocation, keys, false)
	chk, _ := pool.start("chk", gossip.RoleChecker, keys, false, loc.Addr())
	if err := chk.Publish("api", gossip.Entry{Status: checker.StatusHealthy}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(20*time.Second, func() bool { return len(loc.ReportsFor("api")) == 1 && len(loc.Members()) == 2 }) {
		t.Fatal("the encrypted pool did not form")
	}

	// Two intruder pools gossip forged rows among themselves: one with the wrong key, one
	// without a key. Their first node's packets are captured.
	intruders := map[string][][]byte{"wrong key": {wrongKey}, "no key": nil}
	var ids []string
	captures := map[string][][]byte{}
	var nodes []*gossip.Pool
	for name, k := range intruders {
		a, rec := pool.start("forger-"+name[:2], gossip.RoleChecker, k, true)
		b, _ := pool.start("peer-"+name[:2], gossip.RoleLocation, k, false, a.Addr())
		ids = append(ids, a.ID(), b.ID())
		nodes = append(nodes, a, b)
		for i := range 3 {
			if err := a.Publish(fmt.Sprintf("forged-%d", i), gossip.Entry{Status: checker.StatusUnhealthy, Reason: "forged"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Publish("api", gossip.Entry{Status: checker.StatusUnhealthy, Reason: "forged"}); err != nil {
			t.Fatal(err)
		}
		if !waitFor(10*time.Second, func() bool { return len(b.ReportsFor("api")) == 1 }) {
			t.Fatalf("intruder pool %q did not form", name)
		}
		// Let the forger gossip for a while: heartbeats, deltas, probes.
		time.Sleep(2 * time.Second)
		captures[name] = rec.captured()
	}

	// Attempts: every intruder node joins the pool (through both of its nodes) joins times,
	// then the captures are replayed rounds times at the location and the checker.
	const joins = 10
	attempts, joined := 0, 0
	for _, n := range nodes {
		for range joins {
			attempts++
			if k, err := n.Join(loc.Addr(), chk.Addr()); err == nil && k > 0 {
				joined++
			}
		}
	}
	const rounds = 5
	packets := 0
	for range rounds {
		for _, name := range []string{"wrong key", "no key"} {
			for _, target := range []string{loc.Addr(), chk.Addr()} {
				packets += replay(t, captures[name], target)
			}
		}
	}
	time.Sleep(2 * time.Second)
	members, rows := foreign(loc, ids)
	cm, cr := foreign(chk, ids)
	members, rows = members+cm, rows+cr
	for _, r := range loc.ReportsFor("api") {
		if r.Checker != "chk" {
			t.Errorf("the location holds a report for api from %s", r.Checker)
		}
	}

	// Control: the plaintext capture lands at a location of an unencrypted pool.
	open, _ := pool.start("open-loc", gossip.RoleLocation, nil, false)
	replay(t, captures["no key"], open.Addr())
	controlRows := 0
	waitFor(5*time.Second, func() bool { _, controlRows = foreign(open, ids); return controlRows > 0 })

	t.Logf("captured %d wrong-key and %d plaintext packets; joins %d of %d reached a node; control: %d forged rows landed in the unencrypted pool",
		len(captures["wrong key"]), len(captures["no key"]), joined, attempts, controlRows)
	row(t, "gossip from nodes with the wrong key and with no key: join an encrypted pool (1 checker, 1 location, loopback sockets), push rows by push/pull, replay their captured UDP gossip (deltas, heartbeats) at both nodes",
		fmt.Sprintf("%d joins, %d packets", attempts, packets),
		fmt.Sprintf("members admitted %d, rows accepted %d (control: the plaintext replay put %d rows into an unencrypted pool)", members, rows, controlRows))
	if members != 0 || rows != 0 || joined != 0 {
		t.Errorf("got through: %d members, %d rows, %d joins", members, rows, joined)
	}
	if controlRows == 0 {
		t.Error("control: the plaintext replay put no row into an unencrypted pool, so the test cannot fail")
	}
	if packets == 0 {
		t.Error("nothing was replayed")
	}
}
