package sim

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/lab/cluster"
	"github.com/vigil-dns/vigil/lab/dev"
)

// TestGoroutinesByNode: goroutines started under a node's labels, and those they start, are
// counted for that node; the rest are not.
func TestGoroutinesByNode(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	pprof.Do(context.Background(), pprof.Labels(cluster.LabelNode, "test-node-a", cluster.LabelRole, "checker"), func(context.Context) {
		for range 3 {
			wg.Go(func() {
				wg.Go(func() { <-stop }) // a goroutine's goroutine carries its labels too
				<-stop
			})
		}
	})
	wg.Go(func() { <-stop })
	deadline := time.Now().Add(5 * time.Second)
	for {
		counts, unlabeled, err := goroutinesByNode()
		if err != nil {
			t.Fatal(err)
		}
		if counts["test-node-a"] == 6 && unlabeled >= 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counted %v, %d unlabeled; want 6 for test-node-a, and this test's own goroutines unlabeled", counts, unlabeled)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOpenSockets: a socket bound to a checker's source address is found with that address.
func TestOpenSockets(t *testing.T) {
	src := netip.MustParseAddr("127.0.1.77")
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: src.AsSlice()})
	if err != nil {
		t.Skipf("cannot bind %s: %v", src, err)
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: src.AsSlice()})
	if err != nil {
		t.Fatal(err)
	}
	socks, err := openSockets()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ln.Addr().String(), pc.LocalAddr().String()}
	count := func(socks []netip.AddrPort) int {
		n := 0
		for _, s := range socks {
			if s.Addr() == src && slices.Contains(want, s.String()) {
				n++
			}
		}
		return n
	}
	if n := count(socks); n != 2 {
		t.Errorf("found %d of the 2 sockets %v among %v", n, want, socks)
	}
	ln.Close()
	pc.Close()
	if socks, err = openSockets(); err != nil {
		t.Fatal(err)
	}
	if n := count(socks); n != 0 {
		t.Errorf("found %d sockets closed already", n)
	}
}

// TestParseProcAddr reads /proc/net addresses, IPv4 and IPv6.
func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"0101007F:0035":                         "127.0.1.1:53",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80",
	} {
		got, err := parseProcAddr(in)
		if err != nil || got.String() != want {
			t.Errorf("parseProcAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:XYZ", "01007F:0035"} {
		if _, err := parseProcAddr(bad); err == nil {
			t.Errorf("parseProcAddr(%q) took it", bad)
		}
	}
}

// TestParseGrowSteps: grow, measure and the nodes network's checkers per region.
func TestParseGrowSteps(t *testing.T) {
	regions := dev.DefaultConfig().Regions
	sc, err := ParseScript("ok", strings.NewReader("network nodes 6\nmeasure\ngrow 9\n"), regions)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Network != NetworkNodes || sc.CheckersPerRegion != 6 || len(sc.Steps) != 2 || sc.Steps[1].Count != 9 || sc.Steps[1].String() != "grow 9" {
		t.Errorf("parsed %+v", sc)
	}
	for _, bad := range []string{"grow", "grow 0", "grow x", "grow 1000", "measure now", "network nodes 0", "network dev 3", "network nodes 3 4"} {
		if _, err := ParseScript("bad", strings.NewReader(bad+"\n"), regions); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestFleetGrowth is the Kinesis story: the checker fleet grows by half at once. Per-node
// goroutines, sockets and heap stay flat; no location counts fewer fresh reports of a check
// than its shards promise while they move (a checker that leaves a shard hands it off);
// the assignment rebalances within a bound; no healthy verdict flips, no violation.
func TestFleetGrowth(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 30 agent runtimes")
	}
	// Not parallel: the measures count the whole process's goroutines, sockets and heap, and
	// other networks' nodes carry the same names. Parallel tests wait until this one is done.
	sc, err := Scenario("fleet-growth", dev.DefaultConfig().Regions)
	if err != nil {
		t.Fatal(err)
	}
	res := runChecked(t, sc) // no error, violation or flip of a healthy endpoint
	if res.Audit.Answers < 100 || res.Audit.LastResort != 0 {
		t.Errorf("%d answers, %d in last resort: want answers flowing, none in last resort", res.Audit.Answers, res.Audit.LastResort)
	}
	g := res.Growth
	if g == nil || len(g.Rebalances) != 1 || len(g.Measures) != 2 {
		t.Fatalf("growth findings: %+v", g)
	}
	for _, p := range g.Problems() {
		t.Error(p)
	}
	before, after := g.Measures[0], g.Measures[1]
	checkers := before.Role("checker").Nodes
	if added := after.Role("checker").Nodes - checkers; added*2 < checkers {
		t.Errorf("%d checkers, then %d more: not a growth by half", checkers, added)
	}
	// Every node runs goroutines (memberlist's among them), and a location holds its DNS sockets:
	// a measurement that attributed nothing would pass the flatness test vacuously.
	for _, m := range g.Measures {
		l, c := m.Role("location"), m.Role("checker")
		if l.MinGoroutines < 5 || c.MinGoroutines < 5 || l.MinSockets < 2 || m.Heap == 0 {
			t.Errorf("%s: goroutines per location %d+, per checker %d+, sockets per location %d+, heap %d: a node's resources went uncounted",
				m.Label, l.MinGoroutines, c.MinGoroutines, l.MinSockets, m.Heap)
		}
	}
	// The new checkers' first probes are due within an interval (1s) of their assignment, and
	// a checker that left a shard hands it off one interval after they report: rebalanced in
	// about 3s (2.4s to 3.15s in 7 runs of 8). A node whose view of membership lags (1 run in
	// 8: a location still expected an old holder 10s on, while it counted the new one) is
	// caught up by memberlist's push/pull, every 15s at 30 nodes: hence the bound. Both bounds
	// are of the time the nodes ran: the time the harness's process stalled meanwhile (not
	// scheduled on a busy machine), as this run measured it, comes on top.
	rb := g.Rebalances[0]
	if rb.Moved == 0 || rb.Took <= 0 || rb.Took > 20*time.Second+rb.Stalled || rb.Covered > rb.Took || rb.Covered > 5*time.Second+rb.StalledCovering {
		t.Errorf("%d shards moved; every planned checker counted after %v (%v stalled), rebalanced after %v (%v stalled): want some moved, counted within 5s, rebalanced within 20s, plus the stalls",
			rb.Moved, rb.Covered, rb.StalledCovering, rb.Took, rb.Stalled)
	}
}

// TestHandoffGapBound: a location short of the promised fresh reports while shards move is a
// problem (a checker left a shard without handing it off), unless every such look came within
// a freshness window after the harness stalled.
func TestHandoffGapBound(t *testing.T) {
	gap := Growth{Rebalances: []Rebalance{{Want: 6, FreshDuring: [2]int{5, 9}, ShortLooks: 4, ShortStalled: 1}}}
	if p := gap.Problems(); len(p) != 1 || !strings.Contains(p[0], "as few as 5 fresh reports") || !strings.Contains(p[0], "in 3 looks") {
		t.Errorf("5 of 6 promised in 4 looks, 1 after a stall: %v", p)
	}
	stalled := Growth{Rebalances: []Rebalance{{Want: 6, FreshDuring: [2]int{5, 9}, ShortLooks: 4, ShortStalled: 4}}}
	if p := stalled.Problems(); len(p) != 0 {
		t.Errorf("5 of 6 promised, every short look after a stall: %v", p)
	}
	whole := Growth{Rebalances: []Rebalance{{Want: 6, FreshDuring: [2]int{6, 9}}}}
	if p := whole.Problems(); len(p) != 0 {
		t.Errorf("never short: %v", p)
	}
}

// TestHeapFlatBound: the later measure's least heap is held to the earlier one's most, so
// that garbage allocated during a stretched collection fails nothing, and a heap that grew per
// node fails.
func TestHeapFlatBound(t *testing.T) {
	measure := func(nodes int, kept, left float64) Resources {
		r := Resources{Nodes: make([]Usage, nodes), Heap: uint64(kept * 1024 * float64(nodes)), HeapHigh: uint64(left * 1024 * float64(nodes))}
		return r
	}
	flat := Growth{Measures: []Resources{measure(21, 380, 397), measure(30, 354, 1040)}}
	if p := flat.Problems(); len(p) != 0 {
		t.Errorf("a collection that left 1040 KiB per node, 354 KiB kept: %v", p)
	}
	grown := Growth{Measures: []Resources{measure(21, 527, 527), measure(30, 715, 723)}}
	if p := grown.Problems(); len(p) != 1 || !strings.Contains(p[0], "heap per node") {
		t.Errorf("527 KiB per node, then at least 715 KiB: %v", p)
	}
	s := HeapSample{After: 31 << 20, During: 24 << 20}
	if s.Kept() != 7<<20 || s.quiet() {
		t.Errorf("%+v: kept %d, quiet %v", s, s.Kept(), s.quiet())
	}
	if s := (HeapSample{After: 10 << 20, During: 1 << 10}); s.Kept() != 10<<20-1<<10 || !s.quiet() {
		t.Errorf("%+v: kept %d, quiet %v", s, s.Kept(), s.quiet())
	}
	if s := (HeapSample{After: 1 << 20, During: 2 << 20}); s.Kept() != 0 {
		t.Errorf("%+v: kept %d", s, s.Kept())
	}
}

// TestQuietHeap: a block kept shows in both bounds of a sample (a leak is not subtracted).
func TestQuietHeap(t *testing.T) {
	before := quietHeap()
	kept := make([]byte, 8<<20)
	for i := range kept {
		kept[i] = byte(i)
	}
	after := quietHeap()
	if after.Kept() < before.Kept()+7<<20 || after.After < before.After+7<<20 {
		t.Errorf("8 MiB retained: kept %d then %d, left %d then %d", before.Kept(), after.Kept(), before.After, after.After)
	}
	runtime.KeepAlive(kept)
}
