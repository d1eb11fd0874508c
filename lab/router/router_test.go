package router

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

// chanDevice is a device of packets passed through channels.
type chanDevice struct {
	in, out chan []byte
	done    chan struct{}
	once    sync.Once
}

func newChanDevice() *chanDevice {
	return &chanDevice{in: make(chan []byte, 16), out: make(chan []byte, 16), done: make(chan struct{})}
}

func (d *chanDevice) Read(p []byte) (int, error) {
	select {
	case b := <-d.in:
		return copy(p, b), nil
	case <-d.done:
		return 0, io.EOF
	}
}

func (d *chanDevice) Write(p []byte) (int, error) {
	d.out <- append([]byte(nil), p...)
	return len(p), nil
}

func (d *chanDevice) Close() error { d.once.Do(func() { close(d.done) }); return nil }

// ipv4 returns a minimal IPv4 header from src to dst with a marker byte after it.
func ipv4(src, dst string, mark byte) []byte {
	b := make([]byte, 21)
	b[0] = 0x45
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	b[20] = mark
	return b
}

// TestRouterCarriesWithLatencyAndFaults sends packets through one router to a peer played
// by a UDP socket: each arrives no sooner than the link's latency, a cut or a loss of 100%
// drops them, heal restores them, and the peer's packets come out of the device.
func TestRouterCarriesWithLatencyAndFaults(t *testing.T) {
	peer, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	const latency = 80 * time.Millisecond
	dev := newChanDevice()
	r, err := New(Config{Region: "us-east", Logger: slog.New(slog.DiscardHandler), Listen: netip.MustParseAddrPort("127.0.0.1:0"), Peers: []Peer{
		{Region: "eu-west", Subnet: netip.MustParsePrefix("10.9.2.0/24"), Endpoint: peer.LocalAddr().(*net.UDPAddr).AddrPort(), Latency: latency},
		{Region: "sa-east", Subnet: netip.MustParsePrefix("10.9.3.0/24"), Endpoint: netip.MustParseAddrPort("127.0.0.1:9"), Latency: latency},
	}}, dev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	// receive returns the marker of the next packet at the peer within d, or -1.
	buf := make([]byte, 100)
	receive := func(d time.Duration) int {
		_ = peer.SetReadDeadline(time.Now().Add(d))
		n, err := peer.Read(buf)
		if err != nil || n != 21 {
			return -1
		}
		return int(buf[20])
	}
	start := time.Now()
	dev.in <- ipv4("10.9.1.2", "10.9.2.2", 1)
	if got := receive(2 * time.Second); got != 1 {
		t.Fatalf("packet to eu-west: got marker %d, want 1", got)
	}
	if took := time.Since(start); took < latency {
		t.Errorf("packet arrived after %v, before the link's latency %v", took, latency)
	}
	dev.in <- ipv4("10.9.1.2", "10.99.0.1", 2) // no region's subnet: not carried
	if got := receive(300 * time.Millisecond); got != -1 {
		t.Errorf("a packet to no region's subnet reached the peer (marker %d)", got)
	}

	for _, c := range [][]string{{"cut", "eu-west"}, {"cut-oneway", "us-east", "eu-west"}, {"loss", "us-east", "eu-west", "100"}} {
		lines, err := r.Apply(c)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		dev.in <- ipv4("10.9.1.2", "10.9.2.2", 3)
		if got := receive(300 * time.Millisecond); got != -1 {
			t.Errorf("%v: a packet reached the peer (marker %d)\n%s", c, got, strings.Join(lines, "\n"))
		}
		if _, err := r.Apply([]string{"heal"}); err != nil {
			t.Fatal(err)
		}
	}
	// A one-way cut the other way does not stop what this router sends.
	if _, err := r.Apply([]string{"cut-oneway", "eu-west", "us-east"}); err != nil {
		t.Fatal(err)
	}
	dev.in <- ipv4("10.9.1.2", "10.9.2.2", 4)
	if got := receive(2 * time.Second); got != 4 {
		t.Errorf("after cut-oneway eu-west us-east: got marker %d, want 4", got)
	}
	// The counter of a sent packet moves just after the send.
	var s Stats
	for start := time.Now(); time.Since(start) < 2*time.Second; time.Sleep(10 * time.Millisecond) {
		if s = r.Stats()[regions.Link{From: "us-east", To: "eu-west"}]; s.Sent == 2 {
			break
		}
	}
	if s.Sent != 2 || s.Cut != 2 || s.Lost != 1 {
		t.Errorf("stats %+v: want 2 sent, 2 cut, 1 lost", s)
	}

	// The peer's packets come out of the device; a stranger's do not.
	if _, err := peer.WriteToUDPAddrPort(ipv4("10.9.2.2", "10.9.1.2", 5), r.Addr()); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-dev.out:
		if b[20] != 5 {
			t.Errorf("device got marker %d, want 5", b[20])
		}
	case <-time.After(2 * time.Second):
		t.Error("the peer's packet did not come out of the device")
	}
}

// TestFaults checks the commands' effect on the table and their errors.
func TestFaults(t *testing.T) {
	names := []string{"us-east", "eu-west", "sa-east"}
	f := NewFaults(names, map[regions.Link]time.Duration{{From: "us-east", To: "sa-east"}: 60 * time.Millisecond, {From: "sa-east", To: "us-east"}: 60 * time.Millisecond})
	steps := []struct {
		cmd     string
		err     string
		changed []regions.Link // directions cut afterwards
	}{
		{cmd: "cut sa-east", changed: []regions.Link{{From: "us-east", To: "sa-east"}, {From: "eu-west", To: "sa-east"}, {From: "sa-east", To: "us-east"}, {From: "sa-east", To: "eu-west"}}},
		{cmd: "heal"},
		{cmd: "cut us-east sa-east", changed: []regions.Link{{From: "us-east", To: "sa-east"}, {From: "sa-east", To: "us-east"}}},
		{cmd: "heal"},
		{cmd: "cut-oneway sa-east us-east", changed: []regions.Link{{From: "sa-east", To: "us-east"}}},
		{cmd: "heal"},
		{cmd: "cut mars", err: `router: cut: unknown region "mars" (regions: us-east, eu-west, sa-east)`},
		{cmd: "cut us-east us-east", err: `router: cut: a region cannot be cut from itself`},
		{cmd: "loss us-east sa-east 120", err: `router: loss: "120" is not a percentage from 0 to 100`},
		{cmd: "latency us-east sa-east fast", err: `router: latency: "fast" is not a duration from 0 to 10s`},
		{cmd: "latency us-east sa-east 50ms 5ms", err: `router: latency: the routers hold every packet for the same time: no jitter`},
		{cmd: "explode", err: `router: unknown fault "explode" (faults: cut, cut-oneway, loss, latency, heal)`},
	}
	for _, s := range steps {
		err := f.Apply(strings.Fields(s.cmd))
		if (err == nil) != (s.err == "") || (err != nil && err.Error() != s.err) {
			t.Errorf("%s: error %v, want %q", s.cmd, err, s.err)
			continue
		}
		for _, a := range names {
			for _, b := range names {
				d := regions.Link{From: a, To: b}
				if a != b && f.Of(d).Cut != slices.Contains(s.changed, d) {
					t.Errorf("after %s: %v cut is %v", s.cmd, d, f.Of(d).Cut)
				}
			}
		}
	}
	if err := f.Apply(strings.Fields("latency us-east sa-east 200ms")); err != nil {
		t.Fatal(err)
	}
	if l := f.Of(regions.Link{From: "sa-east", To: "us-east"}); l.Delay != 200*time.Millisecond {
		t.Errorf("latency sa-east -> us-east %v, want 200ms", l.Delay)
	}
	if err := f.Apply(strings.Fields("latency us-east sa-east 0")); err != nil {
		t.Fatal(err)
	}
	if l := f.Of(regions.Link{From: "sa-east", To: "us-east"}); l.Delay != 60*time.Millisecond || f.Active() {
		t.Errorf("after latency 0: %v, active %v; want the default 60ms and no fault", l.Delay, f.Active())
	}
}
