package regions

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/memberlist"
)

func newNet(t *testing.T) *Network {
	t.Helper()
	n, err := NewNetwork(7, "eu", "us", "ap")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func transports(t *testing.T, n *Network, regions ...string) []*Transport {
	t.Helper()
	var out []*Transport
	for _, r := range regions {
		tr, err := n.NewTransport(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

// received drains a transport's packets without blocking.
func received(tr *Transport) int {
	n := 0
	for {
		select {
		case <-tr.PacketCh():
			n++
		default:
			return n
		}
	}
}

// TestPacketsCutOneWayAndHeal: packets cross healthy links, none cross a cut one, a one-way
// cut drops only its direction, and heal restores.
func TestPacketsCutOneWayAndHeal(t *testing.T) {
	n := newNet(t)
	tr := transports(t, n, "eu", "us")
	eu, us := tr[0], tr[1]
	send := func(from, to *Transport) {
		t.Helper()
		if _, err := from.WriteTo([]byte("ping"), to.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	send(eu, us)
	if got := received(us); got != 1 {
		t.Fatalf("healthy link: %d packets", got)
	}
	if err := n.Cut("eu", "us"); err != nil {
		t.Fatal(err)
	}
	send(eu, us)
	send(us, eu)
	if got := received(us) + received(eu); got != 0 {
		t.Errorf("cut link: %d packets", got)
	}
	if err := n.Heal("eu", "us"); err != nil {
		t.Fatal(err)
	}
	if err := n.CutOneWay("eu", "us"); err != nil { // us does not hear eu; eu hears us
		t.Fatal(err)
	}
	send(eu, us)
	send(us, eu)
	if a, b := received(us), received(eu); a != 0 || b != 1 {
		t.Errorf("one-way cut: us got %d (want 0), eu got %d (want 1)", a, b)
	}
	if _, err := eu.DialTimeout(us.Addr(), time.Millisecond); err == nil {
		t.Error("a dial over a one-way cut succeeded")
	}
	n.HealAll()
	send(eu, us)
	if got := received(us); got != 1 {
		t.Errorf("after HealAll: %d packets", got)
	}
	if err := n.Cut("eu", "mars"); !errors.Is(err, ErrUnknownRegion) {
		t.Errorf("unknown region: %v", err)
	}
	if _, err := eu.WriteTo([]byte("x"), "10.9.9.9:1"); err != nil {
		t.Errorf("a packet to nowhere is lost, not an error: %v", err)
	}
}

// TestLossIsSeededAndProportional: 20% loss drops about a fifth of the packets, and the same
// seed drops the same packets.
func TestLossIsSeededAndProportional(t *testing.T) {
	run := func() []bool {
		n := newNet(t)
		tr := transports(t, n, "eu", "us")
		if err := n.SetLossAll(20); err != nil {
			t.Fatal(err)
		}
		var got []bool
		for range 2000 {
			tr[0].WriteTo([]byte("p"), tr[1].Addr())
			got = append(got, received(tr[1]) == 1)
		}
		return got
	}
	a, b := run(), run()
	lost := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("packet %d: same seed, different fate", i)
		}
		if !a[i] {
			lost++
		}
	}
	if lost < 300 || lost > 500 {
		t.Errorf("lost %d of 2000 at 20%% loss", lost)
	}
	n := newNet(t)
	if err := n.SetLoss("eu", "us", 101); err == nil {
		t.Error("loss 101% accepted")
	}
}

// TestLatencyAndStreamsUnderSynctest: latency delays packets by simulated time; streams
// connect over healthy links and time out into a black hole on cut ones.
func TestLatencyAndStreamsUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet(t)
		tr := transports(t, n, "eu", "ap")
		eu, ap := tr[0], tr[1]
		if err := n.SetLatency("eu", "ap", 150*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		eu.WriteTo([]byte("hello"), ap.Addr())
		p := <-ap.PacketCh()
		if d := time.Since(start); d != 150*time.Millisecond {
			t.Errorf("packet took %v, want 150ms", d)
		}
		if string(p.Buf) != "hello" || p.From.String() != eu.Addr() {
			t.Errorf("packet %q from %v", p.Buf, p.From)
		}

		go func() {
			c := <-ap.StreamCh()
			io.Copy(c, c)
			c.Close()
		}()
		start = time.Now()
		c, err := eu.DialTimeout(ap.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 300*time.Millisecond {
			t.Errorf("handshake took %v, want one round trip of 300ms", d)
		}
		c.Write([]byte("echo"))
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "echo" {
			t.Errorf("stream echo: %q %v", buf, err)
		}
		c.Close()

		n.Cut("eu", "ap")
		start = time.Now()
		if _, err := eu.DialTimeout(ap.Addr(), 2*time.Second); err == nil {
			t.Error("dial over a cut link succeeded")
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("black-hole dial failed after %v, want the 2s timeout", d)
		}
		ap.Shutdown()
		n.HealAll()
		eu.WriteTo([]byte("late"), ap.Addr())
		if _, err := eu.DialTimeout(ap.Addr(), time.Second); err == nil {
			t.Error("dial to a shut-down transport succeeded")
		}
	})
}

// TestCutBreaksOpenStreams: a stream opened before a cut stops carrying data once the link is
// cut, in either direction, instead of tunnelling state through the partition.
func TestCutBreaksOpenStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet(t)
		tr := transports(t, n, "eu", "ap")
		eu, ap := tr[0], tr[1]
		accepted := make(chan net.Conn, 1)
		go func() { accepted <- <-ap.StreamCh() }()
		c, err := eu.DialTimeout(ap.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		srv := <-accepted
		go io.Copy(io.Discard, srv)
		if _, err := c.Write([]byte("before")); err != nil {
			t.Fatalf("write before the cut: %v", err)
		}
		if err := n.CutOneWay("ap", "eu"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("after")); err == nil {
			t.Fatal("a stream carried data across a cut link")
		}
		if _, err := srv.Write([]byte("reply")); err == nil {
			t.Fatal("the far end of a broken stream still writes")
		}
		srv.Close()
	})
}

// TestMemberlistOverTransport: two real memberlist instances join over the simulated network
// in a synctest bubble, and a cut makes each declare the other dead.
func TestMemberlistOverTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet(t)
		tr := transports(t, n, "eu", "us")
		var ms []*memberlist.Memberlist
		for i, name := range []string{"a", "b"} {
			cfg := memberlist.DefaultLANConfig()
			cfg.Name = name
			cfg.Transport = tr[i]
			cfg.LogOutput = io.Discard
			m, err := memberlist.Create(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		if _, err := ms[1].Join([]string{tr[0].Addr()}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if ms[0].NumMembers() != 2 {
			t.Fatalf("a sees %d members", ms[0].NumMembers())
		}
		n.Cut("eu", "us")
		time.Sleep(time.Minute)
		if ms[0].NumMembers() != 1 || ms[1].NumMembers() != 1 {
			t.Errorf("after a cut: %d and %d members, want 1 each", ms[0].NumMembers(), ms[1].NumMembers())
		}
		for _, m := range ms {
			m.Shutdown()
		}
		time.Sleep(time.Minute) // memberlist's goroutines wait on timers after Shutdown
	})
}

// TestDialer: probes from a region reach a real HTTP server placed in another region, fail
// into a black hole while the link is cut, and pass again after heal.
func TestDialer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	n := newNet(t)
	addr := srv.Listener.Addr().String()
	if err := n.PlaceTarget(addr, "us"); err != nil {
		t.Fatal(err)
	}
	d, err := n.Dialer("eu")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	get := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := get(5 * time.Second); err != nil {
		t.Fatalf("healthy link: %v", err)
	}
	n.Cut("eu", "us")
	if err := get(100 * time.Millisecond); err == nil {
		t.Error("a probe crossed a cut link")
	}
	local, _ := n.Dialer("us")
	if c, err := local.DialContext(context.Background(), "tcp", addr); err != nil {
		t.Errorf("a probe within the region failed: %v", err)
	} else {
		c.Close()
	}
	n.HealAll()
	if err := get(5 * time.Second); err != nil {
		t.Errorf("after heal: %v", err)
	}
	if err := n.PlaceTarget("nonsense", "us"); err == nil {
		t.Error("PlaceTarget accepted an address without a port")
	}
	var ne net.Error
	n.Cut("eu", "us")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.DialContext(ctx, "tcp", addr); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("black-hole dial error %v is not a timeout", err)
	}
}
