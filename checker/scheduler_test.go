package checker

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
)

// pipeNet is an in-memory network for scheduling tests under testing/synctest, plugged in
// where the simulated regions plug theirs: the Dialer. Each dial gets a net.Pipe whose far
// end answers HTTP 200, or, for addresses in hang, never answers.
type pipeNet struct {
	hang map[string]bool

	mu        sync.Mutex
	active    map[string]int
	maxActive map[string]int
	total     int
	maxTotal  int
}

func newPipeNet(hang ...string) *pipeNet {
	p := &pipeNet{hang: map[string]bool{}, active: map[string]int{}, maxActive: map[string]int{}}
	for _, h := range hang {
		p.hang[h] = true
	}
	return p
}

func (p *pipeNet) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	client, server := net.Pipe()
	var once sync.Once
	release := func() {
		once.Do(func() {
			p.mu.Lock()
			p.active[address]--
			p.total--
			p.mu.Unlock()
		})
	}
	p.mu.Lock()
	p.active[address]++
	p.total++
	p.maxActive[address] = max(p.maxActive[address], p.active[address])
	p.maxTotal = max(p.maxTotal, p.total)
	p.mu.Unlock()
	go func() {
		defer server.Close()
		buf := make([]byte, 1024)
		var got []byte
		for !containsCRLFCRLF(got) {
			n, err := server.Read(buf)
			if err != nil {
				return
			}
			got = append(got, buf[:n]...)
		}
		if p.hang[address] {
			server.Read(buf) // until the prober gives up and closes
			return
		}
		server.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	}()
	return &closeHook{Conn: client, close: release}, nil
}

// closeHook calls close when the prober closes its connection.
type closeHook struct {
	net.Conn
	close func()
}

func (c *closeHook) Close() error {
	c.close()
	return c.Conn.Close()
}

// simCheck is a check of 10.0.0.x (allowed by the test's allow-list) on the pipe network.
func simCheck(id, host string, interval, timeout time.Duration) config.Check {
	c := config.DefaultCheck()
	c.ID, c.Protocol = id, config.ProtocolHTTP
	c.Target = config.Target{Host: host, Port: 80}
	c.Interval, c.Timeout = config.Duration(interval), config.Duration(timeout)
	return c
}

func simOptions(pn *pipeNet) Options {
	return Options{
		Name:   "sim",
		Logger: quiet(),
		Prober: ProberOptions{Dialer: pn,
			Addresses: AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}},
	}
}

// TestScheduleSpreadAndInterval runs a minute of simulated time: every check is probed at
// its own phase of the interval and then exactly every interval, with no lag, and a check
// whose probe outlasts its interval never has two probes in flight.
func TestScheduleSpreadAndInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		iv := 10 * time.Second
		pn := newPipeNet("10.0.0.99:80")
		var mu sync.Mutex
		starts := map[string][]time.Time{}
		opts := simOptions(pn)
		opts.OnResult = func(id string, r Result) {
			mu.Lock()
			defer mu.Unlock()
			starts[id] = append(starts[id], r.Start)
			if r.Lag != 0 {
				t.Errorf("%s: lag %v in simulated time", id, r.Lag)
			}
			if id != "slow" && !r.Healthy {
				t.Errorf("%s: %s (%s)", id, r.Reason, r.Message)
			}
		}
		c, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		checks := []config.Check{simCheck("slow", "10.0.0.99", iv, 25*time.Second)}
		for _, id := range ids(n, "c") {
			checks = append(checks, simCheck(id, "10.0.0.1", iv, time.Second))
		}
		t0 := time.Now()
		if err := c.SetChecks(checks); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		time.Sleep(65 * time.Second)
		cancel()
		<-done

		mu.Lock()
		defer mu.Unlock()
		perSecond := make([]int, 10)
		for _, id := range ids(n, "c") {
			s := starts[id]
			if len(s) < 6 || len(s) > 7 {
				t.Fatalf("%s probed %d times in 65 s at a 10 s interval", id, len(s))
			}
			if want := firstDue(t0, iv, spreadHash("sim", id)); !s[0].Equal(want) {
				t.Errorf("%s first probed at %v, want its phase %v", id, s[0].Sub(t0), want.Sub(t0))
			}
			for i := 1; i < len(s); i++ {
				if d := s[i].Sub(s[i-1]); d != iv {
					t.Errorf("%s: probes %v apart", id, d)
				}
			}
			perSecond[s[0].Sub(t0)/time.Second]++
		}
		if m := slices.Max(perSecond); m > 2*n/10 {
			t.Errorf("starts not spread over the interval: %v per second", perSecond)
		}
		slow := starts["slow"]
		if len(slow) < 2 || len(slow) > 3 {
			t.Errorf("the 25 s probe ran %d times in 65 s at a 10 s interval", len(slow))
		}
		for i := 1; i < len(slow); i++ {
			if d := slow[i].Sub(slow[i-1]); d < 25*time.Second {
				t.Errorf("slow check probed again after %v, with its probe still in flight", d)
			}
		}
		if pn.maxActive["10.0.0.99:80"] != 1 {
			t.Errorf("%d probes of one check in flight at once", pn.maxActive["10.0.0.99:80"])
		}
		if got := testutil.ToFloat64(c.metrics.skipped); got < 4 {
			t.Errorf("skipped probes counted %v, want at least 4", got)
		}
	})
}

// TestConcurrencyLimit lets 50 checks hang: never more probes in flight than the limit.
func TestConcurrencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pn := newPipeNet("10.0.0.99:80")
		opts := simOptions(pn)
		opts.Concurrency = 8
		c, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		var checks []config.Check
		for _, id := range ids(50, "h") {
			checks = append(checks, simCheck(id, "10.0.0.99", time.Second, 5*time.Second))
		}
		if err := c.SetChecks(checks); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got := testutil.ToFloat64(c.metrics.inFlight); got != 8 {
			t.Errorf("in-flight gauge %v with every worker stuck, want 8", got)
		}
		cancel()
		<-done
		if pn.maxTotal != 8 {
			t.Errorf("%d probes in flight at most, want the limit 8", pn.maxTotal)
		}
	})
}
