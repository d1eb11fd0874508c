package checker

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
)

// recorder collects what a Checker emits.
type recorder struct {
	mu      sync.Mutex
	reports []Report
	selves  []SelfHealth
	notify  chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) onReport(rep Report) {
	r.mu.Lock()
	r.reports = append(r.reports, rep)
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) onSelf(s SelfHealth) {
	r.mu.Lock()
	r.selves = append(r.selves, s)
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) poke() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// waitFor waits, at most limit, until cond holds over the reports and self events so far.
func (r *recorder) waitFor(t *testing.T, limit time.Duration, what string, cond func([]Report, []SelfHealth) bool) {
	t.Helper()
	deadline := time.After(limit)
	for {
		r.mu.Lock()
		ok := cond(r.reports, r.selves)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.notify:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("after %v, still waiting for %s; reports: %+v; self: %+v", limit, what, r.reports, r.selves)
		}
	}
}

func (r *recorder) snapshot() []Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Report(nil), r.reports...)
}

// latest returns the last report of each check.
func latest(reports []Report) map[string]Report {
	m := map[string]Report{}
	for _, r := range reports {
		m[r.CheckID] = r
	}
	return m
}

// all reports whether every id's latest report satisfies f.
func all(reports []Report, ids []string, f func(Report) bool) bool {
	l := latest(reports)
	for _, id := range ids {
		r, ok := l[id]
		if !ok || !f(r) {
			return false
		}
	}
	return true
}

// runChecker starts c.Run and stops it when the test ends.
func runChecker(t *testing.T, c *Checker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
}

// switchable is a real HTTP server whose status can be changed.
func switchable(t *testing.T) (netip.AddrPort, *atomic.Int32) {
	var status atomic.Int32
	status.Store(200)
	ap := httpServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) })
	return ap, &status
}

func fastCheck(id string, ap netip.AddrPort) config.Check {
	c := checkFor(id, config.ProtocolHTTP, ap)
	c.Interval = config.Duration(40 * time.Millisecond)
	c.Timeout = config.Duration(500 * time.Millisecond)
	c.FailureThreshold, c.SuccessThreshold = 3, 2
	return c
}

func TestCheckerRiseAndFall(t *testing.T) {
	t.Parallel()
	ap, status := switchable(t)
	rec := newRecorder()
	c, err := New(Options{Name: "t", Logger: quiet(), Prober: ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}},
		OnReport: rec.onReport})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"a", "b", "c"}
	var checks []config.Check
	for _, id := range ids {
		checks = append(checks, fastCheck(id, ap))
	}
	if err := c.SetChecks(checks); err != nil {
		t.Fatal(err)
	}
	if len(c.Reports()) != 0 {
		t.Fatal("reports before any probe: a starting checker must report nothing")
	}
	runChecker(t, c)
	rec.waitFor(t, 5*time.Second, "healthy reports", func(rs []Report, _ []SelfHealth) bool {
		return all(rs, ids, func(r Report) bool { return r.Status == StatusHealthy })
	})
	for _, r := range rec.snapshot() {
		if r.Status != StatusHealthy || r.Withdrawn {
			t.Fatalf("while warming up against a healthy target: %+v", r)
		}
	}
	status.Store(503)
	rec.waitFor(t, 5*time.Second, "unhealthy reports", func(rs []Report, _ []SelfHealth) bool {
		return all(rs, ids, func(r Report) bool { return r.Status == StatusUnhealthy })
	})
	for id, r := range latest(rec.snapshot()) {
		if r.Consecutive < 3 || r.Reason != ReasonStatus || !strings.Contains(r.Message, "503") {
			t.Errorf("%s fell with %+v, want 3 consecutive status failures", id, r)
		}
	}
	status.Store(200)
	rec.waitFor(t, 5*time.Second, "healthy again", func(rs []Report, _ []SelfHealth) bool {
		return all(rs, ids, func(r Report) bool { return r.Status == StatusHealthy && r.Consecutive >= 2 })
	})
	// One report per change: healthy, unhealthy, healthy for each check, in Seq order.
	var last uint64
	per := map[string]int{}
	for _, r := range rec.snapshot() {
		if r.Seq <= last {
			t.Errorf("report Seq %d after %d", r.Seq, last)
		}
		last = r.Seq
		per[r.CheckID]++
	}
	for _, id := range ids {
		if per[id] != 3 {
			t.Errorf("%s: %d reports, want 3 (one per change)", id, per[id])
		}
	}
	got := c.Reports()
	if len(got) != 3 || got[0].CheckID != "a" || got[0].Status != StatusHealthy || got[0].Seq == 0 {
		t.Fatalf("Reports() = %+v", got)
	}
	// The snapshot carries the latest probe's phases, for the status API.
	if tm := got[0].Timings; tm.Total <= 0 || tm.Total != got[0].Latency || tm.FirstByte <= 0 || tm.FirstByte < tm.Connect {
		t.Errorf("Reports()[0] timings %+v, latency %v", tm, got[0].Latency)
	}
}

func TestSetChecksChanges(t *testing.T) {
	t.Parallel()
	ap, _ := switchable(t)
	var bHits atomic.Int64
	bAP := httpServer(t, func(w http.ResponseWriter, r *http.Request) { bHits.Add(1) })
	rec := newRecorder()
	c, err := New(Options{Name: "t", Logger: quiet(), Prober: ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}},
		OnReport: rec.onReport})
	if err != nil {
		t.Fatal(err)
	}
	a, b := fastCheck("a", ap), fastCheck("b", bAP)
	calc := config.Check{ID: "calc", Protocol: config.ProtocolCalculated, Children: []string{"a", "b"}}
	disabled := fastCheck("disabled", ap)
	disabled.Disabled = true
	if err := c.SetChecks([]config.Check{a, b, calc, disabled}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.metrics.assigned); got != 2 {
		t.Errorf("%v checks probed, want 2 (calculated and disabled checks are not probed)", got)
	}
	runChecker(t, c)
	rec.waitFor(t, 5*time.Second, "a and b reported", func(rs []Report, _ []SelfHealth) bool {
		return all(rs, []string{"a", "b"}, func(r Report) bool { return r.Status == StatusHealthy })
	})

	// b leaves the assignment: its report is withdrawn and it is probed no more.
	if err := c.SetChecks([]config.Check{a}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, time.Second, "b withdrawn", func(rs []Report, _ []SelfHealth) bool {
		r := latest(rs)["b"]
		return r.Withdrawn && r.Withdraw == WithdrawRemoved
	})
	time.Sleep(100 * time.Millisecond) // a probe in flight may still land
	hits := bHits.Load()
	time.Sleep(300 * time.Millisecond) // more than 7 intervals
	if bHits.Load() != hits {
		t.Errorf("removed check still probed: %d hits, then %d", hits, bHits.Load())
	}

	// Thresholds change: the report stands.
	before := len(rec.snapshot())
	a.FailureThreshold = 5
	if err := c.SetChecks([]config.Check{a}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(rec.snapshot()); n != before {
		t.Errorf("a threshold change emitted %d reports: %+v", n-before, rec.snapshot()[before:])
	}

	// The probe changes: the old report is withdrawn and a new one follows.
	a.Path = "/v2"
	if err := c.SetChecks([]config.Check{a}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, 5*time.Second, "a withdrawn then reported again", func(rs []Report, _ []SelfHealth) bool {
		var withdrawn bool
		for _, r := range rs[before:] {
			if r.CheckID == "a" && r.Withdrawn && r.Withdraw == WithdrawChanged {
				withdrawn = true
			} else if withdrawn && r.CheckID == "a" && r.Status == StatusHealthy {
				return true
			}
		}
		return false
	})

	// Bad input: a clear error, and nothing valid is lost.
	bad := fastCheck("bad", ap)
	bad.Path = "no slash"
	err = c.SetChecks([]config.Check{a, bad, a, {ID: "", Protocol: config.ProtocolTCP}})
	if err == nil || !strings.Contains(err.Error(), `check "bad"`) || !strings.Contains(err.Error(), "assigned twice") ||
		!strings.Contains(err.Error(), "without an id") {
		t.Errorf("SetChecks error = %v", err)
	}
	if got := c.Reports(); len(got) != 1 || got[0].CheckID != "a" {
		t.Errorf("after a partly bad assignment: %+v", got)
	}
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	runChecker(t, c)
	time.Sleep(10 * time.Millisecond)
	if err := c.Run(context.Background()); err == nil {
		t.Error("a second Run was accepted")
	}
}

func TestNewRejectsBadCanary(t *testing.T) {
	t.Parallel()
	_, err := New(Options{Canaries: []config.Check{{ID: "k", Protocol: config.ProtocolTCP}}})
	if err == nil || !strings.Contains(err.Error(), "canary") {
		t.Errorf("New with a canary without target: %v", err)
	}
}

func ids(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// TestCallbacksMayCallBack lets OnReport call Reports and SetChecks (a status API or an
// assignment loop may well do so): no deadlock, and reports still arrive in Seq order.
func TestCallbacksMayCallBack(t *testing.T) {
	t.Parallel()
	ap, status := switchable(t)
	rec := newRecorder()
	var c *Checker
	checks := []config.Check{fastCheck("a", ap), fastCheck("b", ap)}
	var once sync.Once
	c, err := New(Options{Name: "t", Logger: quiet(), Prober: ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}},
		OnReport: func(r Report) {
			_ = c.Reports()
			once.Do(func() {
				if err := c.SetChecks(checks[:1]); err != nil { // drops b from inside a callback
					t.Error(err)
				}
			})
			rec.onReport(r)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetChecks(checks); err != nil {
		t.Fatal(err)
	}
	runChecker(t, c)
	status.Store(500)
	rec.waitFor(t, 5*time.Second, "a unhealthy", func(rs []Report, _ []SelfHealth) bool {
		return latest(rs)["a"].Status == StatusUnhealthy
	})
	var last uint64
	for _, r := range rec.snapshot() {
		if r.Seq <= last {
			t.Errorf("Seq %d delivered after %d", r.Seq, last)
		}
		last = r.Seq
	}
	if got := c.Reports(); len(got) != 1 || got[0].CheckID != "a" {
		t.Errorf("Reports() = %+v, want only a", got)
	}
}

// TestStopWithdrawsAndRestartReportsAgain: a stopped checker withdraws its reports; run again,
// it reports afresh, as a checker that has just started.
func TestStopWithdrawsAndRestartReportsAgain(t *testing.T) {
	t.Parallel()
	ap, _ := switchable(t)
	rec := newRecorder()
	c, err := New(Options{Name: "t", Logger: quiet(), Prober: ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}},
		OnReport: rec.onReport})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetChecks([]config.Check{fastCheck("a", ap)}); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		rec.waitFor(t, 5*time.Second, "a healthy", func(rs []Report, _ []SelfHealth) bool {
			r := latest(rs)["a"]
			return r.Status == StatusHealthy && !r.Withdrawn
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		r := latest(rec.snapshot())["a"]
		if !r.Withdrawn || r.Withdraw != WithdrawStopped {
			t.Fatalf("round %d: after stop, a's report is %+v", round, r)
		}
	}
}
