package abuse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location"
)

// startSignedLocation serves the demo zone signed (by a fresh CSK, with a location signing
// budget of rate new signatures a second, all of it the zone's: it is the only signed zone) on a real UDP socket on 127.0.0.1 until the test ends.
func startSignedLocation(t *testing.T, rate int) (string, *dnssec.Signer, *prometheus.Registry) {
	t.Helper()
	snap := demoSnapshot(t)
	sealer, err := dnssec.NewSealer([]byte("abuse-test-dnssec-secret-0000000"))
	if err != nil {
		t.Fatal(err)
	}
	zk, err := dnssec.InitialKeys("demo.vigil.test.", dnssec.SchemeCombined, sealer, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := location.New(location.Config{Addr: "127.0.0.1:0", Registerer: reg, Logger: logger(),
		SignBudget: dnssec.NewBudget(float64(rate))})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(snap)
	s.SetSigners(map[string]*dnssec.Signer{"demo.vigil.test.": sg})
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("location: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s.Addr().String(), sg, reg
}

// signingFlood asks, with the DO bit, for random names that do not exist (each denial needs a
// signature of its own) from one UDP socket as fast as one goroutine can for d, and returns
// the queries sent and the responses that came back.
func signingFlood(t *testing.T, addr string, d time.Duration) (sent, answered int) {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dst, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			if _, _, err := conn.ReadFromUDP(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	q := new(dns.Msg)
	start := time.Now()
	for time.Since(start) < d {
		q.SetQuestion(fmt.Sprintf("r%016x.demo.vigil.test.", rand.Uint64()), dns.TypeA)
		q.SetEdns0(1232, true)
		q.Id = uint16(sent)
		b, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteToUDP(b, dst); err == nil {
			sent++
		}
		q.Extra = nil
	}
	time.Sleep(300 * time.Millisecond)
	conn.Close()
	wg.Wait()
	return sent, int(got.Load())
}

// A random-subdomain flood against a signed zone: every question needs a new signature (its
// own black-lie NSEC), the costliest thing an unauthenticated client can ask of a location.
// The location's signing budget (500 new signatures a second here, a burst of as many, shared
// between its signed zones: this zone is the only one) bounds what the flood costs;
// questions beyond it are dropped rather than answered unsigned, while the answers a
// legitimate client asks for come from the signature cache and keep coming, signed (at least
// 95% of its questions within 8 tries, or all but one: the socket buffer the flood fills
// drops its packets too, whatever the server does).
func TestAbuseDNSSECSigningFlood(t *testing.T) {
	const rate, d = 500, 3 * time.Second
	addr, sg, reg := startSignedLocation(t, rate)
	stop := make(chan struct{})
	var asked, answered, signed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := &dns.Client{Net: "udp", Timeout: 250 * time.Millisecond,
			Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.IPv4(127, 0, 1, 1)}}}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			q := new(dns.Msg)
			q.SetQuestion("static.demo.vigil.test.", dns.TypeA)
			q.SetEdns0(1232, true)
			asked.Add(1)
			// The flood fills the socket's buffer, which drops legitimate packets as often
			// as flood packets (a third of them here): a stub resolver asks again.
			for range 8 {
				r, _, err := c.Exchange(q, addr)
				if err == nil && len(r.Answer) > 0 {
					answered.Add(1)
					for _, rr := range r.Answer {
						if _, ok := rr.(*dns.RRSIG); ok {
							signed.Add(1)
							break
						}
					}
					break
				}
			}
		}
	}()
	start := time.Now()
	sent, got := signingFlood(t, addr, d)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	made, _, refused, _ := sg.Stats()
	dropped := counter(t, reg, "vigil_location_queries_dropped_total", map[string]string{"reason": "sign_budget"})
	t.Logf("flood: %d queries in %v, %d answered; signatures made %d (budget %d a second: at most %.0f), refused %d, queries dropped %.0f; legitimate: %d asked, %d answered, %d signed",
		sent, elapsed.Round(time.Millisecond), got, made, rate, float64(rate)*elapsed.Seconds()+rate, refused, dropped, asked.Load(), answered.Load(), signed.Load())
	if limit := uint64(float64(rate)*(elapsed.Seconds()+0.5)) + rate; made > limit {
		t.Errorf("signatures made %d, over the budget's %d", made, limit)
	}
	if refused == 0 || dropped == 0 {
		t.Errorf("the flood never met the budget: refused %d, dropped %.0f", refused, dropped)
	}
	// At least 95% answered, or all but one when the flood left the client few questions (on
	// a loaded machine it asked 14 in 3 s, each retry waiting out its timeout).
	if missed := asked.Load() - answered.Load(); asked.Load() == 0 || missed > max(1, asked.Load()/20) || signed.Load() != answered.Load() {
		t.Errorf("legitimate queries: %d asked, %d answered, %d signed", asked.Load(), answered.Load(), signed.Load())
	}

	// Control: the same flood without a budget worth the name.
	addr, sg, _ = startSignedLocation(t, 1<<30)
	start = time.Now()
	sent, got = signingFlood(t, addr, d)
	made, _, _, _ = sg.Stats()
	elapsed = time.Since(start)
	t.Logf("control without a budget: %d queries in %v, %d answered, signatures made %d", sent, elapsed.Round(time.Millisecond), got, made)
	// The flood can ask for more than the budget allows: else the bound above proves nothing.
	if limit := uint64(float64(rate)*(elapsed.Seconds()+0.5)) + rate; made <= limit {
		t.Errorf("control: the flood made only %d signatures without a budget, within the %d the budget allows", made, limit)
	}
}
