package abuse

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location"
)

// startLocation serves the demo zone on a real UDP and TCP socket on 127.0.0.1 with rrl
// until the test ends, and returns its address and metrics registry.
func startLocation(t *testing.T, rrl location.RRLConfig) (string, *prometheus.Registry) {
	t.Helper()
	return startLocationWith(t, location.Config{RRL: rrl})
}

// demoSnapshot returns the location's snapshot of examples/demo.yaml, its zone served by four
// virtual name servers.
func demoSnapshot(t *testing.T) *location.Snapshot {
	t.Helper()
	data, err := os.ReadFile("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := location.NewSnapshot(doc.Zones, map[string][]location.NameServer{
		"demo.vigil.test.": location.ShardNameServers([]int{3, 97, 1024, 2047}, doc.NameServers.Domain, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// startLocationWith is startLocation with the server's configuration (its address, registry
// and logger are set here).
func startLocationWith(t *testing.T, cfg location.Config) (string, *prometheus.Registry) {
	t.Helper()
	snap := demoSnapshot(t)
	reg := prometheus.NewRegistry()
	cfg.Addr, cfg.Registerer, cfg.Logger = "127.0.0.1:0", reg, logger()
	s, err := location.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(snap)
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
	return s.Addr().String(), reg
}

// counter sums the metric's samples whose labels include every label of match.
func counter(t *testing.T, reg *prometheus.Registry, name string, match map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// floodResult counts what one flooding source got back.
type floodResult struct {
	sent, answered, slipped, other int
	took                           time.Duration
}

// flood sends A queries for www.demo.vigil.test from a UDP socket on 127.0.0.1 to addr as
// fast as one goroutine can, for d (at most max queries), and counts the responses that
// arrive until 300 ms after the last query.
func flood(t *testing.T, addr string, d time.Duration, maxQueries int) floodResult {
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
	var res floodResult
	var answered, slipped, other atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, _, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			var m dns.Msg
			switch {
			case m.Unpack(buf[:n]) != nil:
				other.Add(1)
			case m.Truncated && len(m.Answer) == 0:
				slipped.Add(1)
			case len(m.Answer) > 0:
				answered.Add(1)
			default:
				other.Add(1)
			}
		}
	}()
	q := new(dns.Msg)
	q.SetQuestion("www.demo.vigil.test.", dns.TypeA)
	start := time.Now()
	for res.sent < maxQueries && time.Since(start) < d {
		q.Id = uint16(res.sent)
		b, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteToUDP(b, dst); err == nil {
			res.sent++
		}
	}
	res.took = time.Since(start)
	time.Sleep(300 * time.Millisecond)
	conn.Close()
	wg.Wait()
	res.answered, res.slipped, res.other = int(answered.Load()), int(slipped.Load()), int(other.Load())
	return res
}

// paced counts what the other source got.
type paced struct {
	asked, first, answered, truncated int
}

// askPaced sends one query every interval from a UDP socket on 127.0.1.1 (another /24) until
// stop is closed (TXT at the apex, so that the server's counts by type tell it from the
// flood). Like a stub resolver, it tries each query up to 3 times, waiting 250 ms each time.
// It counts the queries asked, those answered at the first try and at all, and the truncated
// responses (a slip of the rate limiter) it got.
func askPaced(addr string, interval time.Duration, stop <-chan struct{}) paced {
	c := &dns.Client{Net: "udp", Timeout: 250 * time.Millisecond,
		Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.IPv4(127, 0, 1, 1)}}}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var p paced
	for {
		select {
		case <-stop:
			return p
		case <-tick.C:
		}
		q := new(dns.Msg)
		q.SetQuestion("demo.vigil.test.", dns.TypeTXT)
		p.asked++
		for try := range 3 {
			r, _, err := c.Exchange(q, addr)
			if err == nil && r.Truncated {
				p.truncated++
			}
			if err == nil && len(r.Answer) > 0 && !r.Truncated {
				p.answered++
				if try == 0 {
					p.first++
				}
				break
			}
		}
	}
}

// TestAbuseDNSFlood: one source (127.0.0.1, its /24) floods a location (the demo zone, real
// UDP socket) with response rate limiting on, as fast as one goroutine can send, while
// another source (127.0.1.1, another /24) asks one query every 20 ms, retrying as a stub
// resolver does. The server may send the flood at most the configured responses a second
// (each second the flood touches), about half of the rest as empty truncated responses (slip
// 2), and nothing more; the other source must never be limited and must keep getting answers.
// The control floods a location without rate limiting: the same source gets far more than
// the allowance.
func TestAbuseDNSFlood(t *testing.T) {
	const rate = 200
	const d = 3 * time.Second
	addr, reg := startLocation(t, location.RRLConfig{ResponsesPerSecond: rate, Slip: 2})

	stop := make(chan struct{})
	var other paced
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		other = askPaced(addr, 20*time.Millisecond, stop)
	}()
	time.Sleep(100 * time.Millisecond)
	res := flood(t, addr, d, 5_000_000)
	close(stop)
	wg.Wait()

	seconds := int(math.Ceil(res.took.Seconds())) + 1 // every second the flood touched
	allowance := rate * seconds
	rrlDropped := int(counter(t, reg, "vigil_location_queries_dropped_total", map[string]string{"reason": "rrl"}))
	rrlSlipped := int(counter(t, reg, "vigil_location_rrl_slipped_total", nil))
	// The server counts the queries it responded to by type; the flood is the only A. What
	// got through is what the server sent: full answers are the responses that were not
	// slips (the other source got none, checked below).
	responded := int(counter(t, reg, "vigil_location_queries_total", map[string]string{"qtype": "A"}))
	sentAnswers := responded - rrlSlipped
	lost := res.sent - responded - rrlDropped
	t.Logf("flood: %d queries in %v (%.0f/s); the server read %d of them: responded to %d (%d full answers, %d slipped), dropped %d by RRL; %d lost in the socket buffer before the server; the flooder read %d answers and %d slips; other source: %d of %d answered at the first try, %d within 3 tries, %d truncated responses",
		res.sent, res.took.Round(time.Millisecond), float64(res.sent)/res.took.Seconds(), responded+rrlDropped, responded, sentAnswers, rrlSlipped, rrlDropped, lost, res.answered, res.slipped, other.first, other.asked, other.answered, other.truncated)

	// Control: the same flood, for 1 s, at a location without rate limiting.
	openAddr, _ := startLocation(t, location.RRLConfig{})
	ctl := flood(t, openAddr, time.Second, 5_000_000)
	t.Logf("control without RRL: %d queries in %v, %d answered", ctl.sent, ctl.took.Round(time.Millisecond), ctl.answered)

	row(t, fmt.Sprintf("DNS flood with RRL on (%d responses/s per /24, slip 2): one source sends A queries as fast as one goroutine can to a location (demo zone, real UDP socket) for %v while another /24 asks every 20 ms", rate, d),
		fmt.Sprintf("%s queries (%s/s)", itoa(res.sent), itoa(int(float64(res.sent)/res.took.Seconds()))),
		fmt.Sprintf("answered %s (allowance %s: %d/s over the %d seconds touched), %s empty truncated (slip), %s dropped by RRL, %s lost in the socket buffer before the server; the other source: %d of %d queries answered within 3 tries (%d at the first), never truncated (control without RRL: %s of %s answered in 1 s)",
			itoa(sentAnswers), itoa(allowance), rate, seconds, itoa(rrlSlipped), itoa(rrlDropped), itoa(max(lost, 0)), other.answered, other.asked, other.first, itoa(ctl.answered), itoa(ctl.sent)))

	if sentAnswers > allowance || res.answered > allowance {
		t.Errorf("got through: %d answers sent to the flooding /24 (%d read), over the allowance of %d", sentAnswers, res.answered, allowance)
	}
	if sentAnswers < rate {
		t.Errorf("the flood got %d answers, under one second's allowance (%d): the limiter or the test is broken", sentAnswers, rate)
	}
	if res.answered > sentAnswers || res.slipped > rrlSlipped || res.answered+res.slipped > res.sent {
		t.Errorf("counts do not add up: %+v, server sent %d answers and %d slips", res, sentAnswers, rrlSlipped)
	}
	// The rate limiter never limits the other /24; the socket buffer the flood fills loses
	// some of its queries (a capacity limit, not the limiter's), which retries make up for.
	if other.truncated != 0 {
		t.Errorf("the other source got %d truncated responses: the flood's limit spilled over", other.truncated)
	}
	if other.asked == 0 || other.answered*100 < other.asked*80 {
		t.Errorf("the other source got %d answers within 3 tries of %d queries during the flood, want at least 80%%", other.answered, other.asked)
	}
	if ctl.answered <= allowance {
		t.Errorf("control: %d answers without rate limiting, not above the allowance %d, so the test cannot fail", ctl.answered, allowance)
	}
}
