package location

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// vnsConfig hosts virtual name servers 1 to 6 on 127.0.0.11 to 127.0.0.16.
func vnsConfig() Config {
	cfg := Config{NameServers: map[int]string{}}
	for i := 1; i <= 6; i++ {
		cfg.NameServers[i] = fmt.Sprintf("127.0.0.%d:0", 10+i)
	}
	return cfg
}

// TestVirtualNameServers checks that a virtual name server answers the zones of its shard
// and refuses the others, while the main listener answers every zone.
func TestVirtualNameServers(t *testing.T) {
	s := startServer(t, vnsConfig())
	// example.test is on 1-4, ns.vigil.test on 1, 2, 5, 6.
	for i := 1; i <= 6; i++ {
		addr := s.NameServerAddr(i)
		if want := netip.AddrFrom4([4]byte{127, 0, 0, byte(10 + i)}); addr.Addr() != want {
			t.Fatalf("ns-%d listens on %v, want %v", i, addr, want)
		}
		for _, c := range []struct {
			name   string
			served bool
		}{{"www.example.test.", i <= 4}, {"ns.vigil.test.", i <= 2 || i >= 5}} {
			for _, network := range []string{"udp", "tcp"} {
				r := exchange(t, network, addr, query(c.name, dns.TypeNS, 0))
				refused := r.Rcode == dns.RcodeRefused
				if refused == c.served {
					t.Errorf("ns-%d %s %s: rcode %s, served %v", i, network, c.name, dns.RcodeToString[r.Rcode], c.served)
				}
			}
		}
	}
	for _, name := range []string{"www.example.test.", "ns.vigil.test."} {
		if r := exchange(t, "udp", s.Addr(), query(name, dns.TypeA, 0)); r.Rcode == dns.RcodeRefused {
			t.Errorf("main listener refused %s", name)
		}
	}
	if s.NameServerAddr(7).IsValid() {
		t.Error("ns-7 has an address though this location does not host it")
	}
}

// TestFloodStaysInItsShard floods the four name servers of example.test (1-4) while a client
// asks ns.vigil.test, which shares two of them (1, 2), on its other two (5, 6): those keep
// answering. The flood is bounded in count and time.
func TestFloodStaysInItsShard(t *testing.T) {
	cfg := vnsConfig()
	cfg.NameServerBudget = 2000
	s := startServer(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	const maxFlood = 400000
	var sent atomic.Int64
	flood := packed(t, query("www.example.test.", dns.TypeA, 0))
	var wg sync.WaitGroup
	for i := 1; i <= 4; i++ {
		wg.Go(func() {
			c, err := net.Dial("udp", s.NameServerAddr(i).String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for ctx.Err() == nil && sent.Load() < maxFlood {
				// Bursts far above the budget, with a pause so that the flood, which runs in
				// this process, leaves the test's client some CPU time.
				for range 100 {
					c.Write(flood) // errors (ICMP refusals) do not matter to a flood
				}
				sent.Add(100)
				time.Sleep(time.Millisecond)
			}
		})
	}

	// Let the flood start, then ask the other zone on its unshared name servers.
	time.Sleep(200 * time.Millisecond)
	client := &dns.Client{Net: "udp", Timeout: time.Second}
	asked, answered := 0, 0
	for ctx.Err() == nil && asked < 40 {
		ns := s.NameServerAddr(5 + asked%2)
		asked++
		r, _, err := client.Exchange(query("ns-1.ns.vigil.test.", dns.TypeA, 0), ns.String())
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
			answered++
		}
		time.Sleep(10 * time.Millisecond)
	}
	stillFlooding := ctx.Err() == nil
	cancel()
	wg.Wait()
	if asked < 10 {
		t.Fatalf("only %d queries asked during the flood", asked)
	}
	if !stillFlooding {
		t.Logf("the flood ended before the queries did (%d sent)", sent.Load())
	}
	if answered < asked*9/10 {
		t.Errorf("ns.vigil.test answered %d of %d queries on ns-5 and ns-6 during the flood", answered, asked)
	}
	var dropped float64
	for i := 1; i <= 4; i++ {
		dropped += testutil.ToFloat64(s.metrics.dropped.WithLabelValues(listenerLabel(i), dropBudget))
	}
	if dropped == 0 {
		t.Errorf("the flood of %d queries spent no budget of ns-1..4", sent.Load())
	}
	for _, i := range []int{5, 6} {
		if d := testutil.ToFloat64(s.metrics.dropped.WithLabelValues(listenerLabel(i), dropBudget)); d != 0 {
			t.Errorf("ns-%d dropped %v queries for budget", i, d)
		}
	}
	t.Logf("flood: %d queries sent, %v dropped by the budgets; other zone: %d/%d answered", sent.Load(), dropped, answered, asked)
}
