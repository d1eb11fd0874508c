package checker

import (
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// checkerGoroutines counts the goroutines running the checker's own code (dispatcher,
// workers, probe deadline callbacks), leaving out the test's servers.
func checkerGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("checker.(*Checker)")) || bytes.Contains(g, []byte("checker.(*Prober)")) {
			n++
		}
	}
	return n
}

// manyChecks returns n HTTP checks spread over targets, at the longest interval.
func manyChecks(n int, targets []netip.AddrPort) []config.Check {
	checks := make([]config.Check, n)
	for i := range checks {
		c := checkFor(fmt.Sprintf("check-%06d", i), config.ProtocolHTTP, targets[i%len(targets)])
		c.Interval = config.Duration(300 * time.Second)
		c.Timeout = config.Duration(2 * time.Second)
		checks[i] = c
	}
	return checks
}

// TestHundredThousandChecks assigns 100,000 checks to one checker: the checker's goroutines
// stay bounded by its concurrency limit, and its memory per check stays under 2 KB in steady
// state (probing, with reports out).
func TestHundredThousandChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("assigns 100,000 checks")
	}
	const n, conc = 100_000, 32
	var targets []netip.AddrPort
	for range 4 {
		targets = append(targets, httpServer(t, func(w http.ResponseWriter, r *http.Request) {}))
	}
	checks := manyChecks(n, targets)
	var results atomic.Int64
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	c, err := New(Options{Name: "scale", Logger: quiet(), Concurrency: conc,
		Prober:   ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}},
		OnResult: func(string, Result) { results.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := c.SetChecks(checks); err != nil {
		t.Fatal(err)
	}
	t.Logf("SetChecks of %d checks took %v", n, time.Since(t0))
	runChecker(t, c)
	most := 0
	for range 15 {
		time.Sleep(100 * time.Millisecond)
		most = max(most, checkerGoroutines())
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(checks)

	if got := results.Load(); got < 50 {
		t.Fatalf("only %d probes in 1.5 s with 100,000 checks over 300 s", got)
	}
	// Dispatcher, workers, and at most one deadline callback per probe in flight.
	if most > 2*conc+1 {
		t.Errorf("%d checker goroutines with 100,000 checks, want at most %d", most, 2*conc+1)
	}
	per := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	t.Logf("%d probes; at most %d checker goroutines; %.0f bytes of heap per assigned check", results.Load(), most, per)
	if !raceEnabled && per > 2048 {
		t.Errorf("%.0f bytes per assigned check, want under 2 KB", per)
	}
}
