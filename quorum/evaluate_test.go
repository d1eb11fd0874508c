package quorum

import (
	"math"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fleet returns n fresh reports heard at t0, the first healthy ones healthy.
func fleet(n, healthy int) []Report {
	rs := make([]Report, n)
	for i := range rs {
		rs[i] = Report{Checker: "c" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Region: "r", Healthy: i < healthy, LastProgress: t0}
	}
	return rs
}

func defaultPolicy() Policy {
	return PolicyFor(config.DefaultCheck(), config.DefaultDocument().Quorum)
}

// TestThresholdIsStrict checks the 18% rule against exact integer arithmetic for every fleet up
// to 120 reports: healthy exactly when 100·healthy > 18·fresh.
func TestThresholdIsStrict(t *testing.T) {
	p := defaultPolicy()
	for n := 1; n <= 120; n++ {
		for h := 0; h <= n; h++ {
			v := Evaluate(p, fleet(n, h), nil, Verdict{}, t0)
			want := StateUnhealthy
			if 100*h > 18*n {
				want = StateHealthy
			}
			if v.State != want {
				t.Fatalf("%d of %d healthy: got %s, want %s", h, n, v.State, want)
			}
		}
	}
	// The boundary named by the issue: exactly 18% is not healthy.
	if v := Evaluate(p, fleet(50, 9), nil, Verdict{}, t0); v.State != StateUnhealthy {
		t.Errorf("9 of 50 (exactly 18%%): got %s, want unhealthy", v.State)
	}
	if v := Evaluate(p, fleet(50, 10), nil, Verdict{}, t0); v.State != StateHealthy {
		t.Errorf("10 of 50 (20%%): got %s, want healthy", v.State)
	}
}

func TestPolicyFor(t *testing.T) {
	got := defaultPolicy()
	want := Policy{HealthyThreshold: 0.18, MinReporters: 1, FreshnessWindow: 15 * time.Second, Hold: time.Minute}
	if got != want {
		t.Errorf("default policy: got %+v, want %+v", got, want)
	}
	c := config.DefaultCheck()
	c.HealthyThreshold, c.MinReporters, c.Inverted, c.Disabled = 0.5, 3, true, true
	q := config.QuorumSettings{FreshnessWindow: config.Duration(30 * time.Second), Hold: config.Duration(2 * time.Minute)}
	got = PolicyFor(c, q)
	want = Policy{HealthyThreshold: 0.5, MinReporters: 3, FreshnessWindow: 30 * time.Second, Hold: 2 * time.Minute, Inverted: true, Disabled: true}
	if got != want {
		t.Errorf("set policy: got %+v, want %+v", got, want)
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Policy
		want Policy
	}{
		{"zero value", Policy{}, Policy{MinReporters: 1, FreshnessWindow: 15 * time.Second}},
		{"NaN threshold", Policy{HealthyThreshold: math.NaN(), MinReporters: 2, FreshnessWindow: time.Second},
			Policy{HealthyThreshold: 0.18, MinReporters: 2, FreshnessWindow: time.Second}},
		{"negative", Policy{HealthyThreshold: -1, MinReporters: -4, FreshnessWindow: -time.Second, Hold: -time.Second},
			Policy{MinReporters: 1, FreshnessWindow: 15 * time.Second}},
		{"above one", Policy{HealthyThreshold: math.Inf(1), MinReporters: 1, FreshnessWindow: time.Second, Hold: time.Second},
			Policy{HealthyThreshold: 1, MinReporters: 1, FreshnessWindow: time.Second, Hold: time.Second}},
	} {
		if got := tc.in.Normalize(); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestFreshnessBoundary(t *testing.T) {
	p := defaultPolicy()
	rs := []Report{{Checker: "a", Healthy: true, LastProgress: t0}}
	if v := Evaluate(p, rs, nil, Verdict{}, t0.Add(p.FreshnessWindow)); v.Counts.Fresh != 1 {
		t.Errorf("heard exactly one window ago: got %+v, want fresh", v.Counts)
	}
	if v := Evaluate(p, rs, nil, Verdict{}, t0.Add(p.FreshnessWindow+1)); v.Counts.Stale != 1 || v.Counts.Fresh != 0 {
		t.Errorf("heard just over one window ago: got %+v, want stale", v.Counts)
	}
	// A location whose clock went back hears "future" progress: it is recent, so fresh.
	if v := Evaluate(p, rs, nil, Verdict{}, t0.Add(-time.Hour)); v.Counts.Fresh != 1 {
		t.Errorf("progress in the future: got %+v, want fresh", v.Counts)
	}
}

func TestHoldAndSince(t *testing.T) {
	p := defaultPolicy() // hold 60s
	healthy := Evaluate(p, fleet(3, 3), nil, Verdict{}, t0)
	if healthy.State != StateHealthy || !healthy.Since.Equal(t0) || !healthy.HeldSince.IsZero() {
		t.Fatalf("first verdict: %+v", healthy)
	}
	again := Evaluate(p, fleet(3, 3), nil, healthy, t0.Add(time.Second))
	if !again.Since.Equal(t0) {
		t.Errorf("unchanged state moved Since to %v", again.Since)
	}
	short := t0.Add(time.Minute)
	held := Evaluate(p, nil, nil, again, short)
	if held.State != StateHealthy || !held.Held() || !held.HeldSince.Equal(short) || !held.Since.Equal(t0) {
		t.Errorf("held: %+v", held)
	}
	still := Evaluate(p, nil, nil, held, short.Add(time.Minute-1))
	if still.State != StateHealthy || !still.HeldSince.Equal(short) {
		t.Errorf("held until just before the hold ends: %+v", still)
	}
	unknown := Evaluate(p, nil, nil, still, short.Add(time.Minute))
	if unknown.State != StateUnknown || unknown.Held() || !unknown.Serving() || !unknown.Since.Equal(short.Add(time.Minute)) {
		t.Errorf("after the hold: %+v", unknown)
	}
	// The location's clock goes back before the hold started: the hold restarts now rather
	// than lasting until the clock catches up.
	back := short.Add(-time.Hour)
	restarted := Evaluate(p, nil, nil, held, back)
	if !restarted.HeldSince.Equal(back) || restarted.State != StateHealthy {
		t.Errorf("clock went back: %+v", restarted)
	}
	// Enough reports again: no longer short.
	rs := fleet(3, 0)
	for i := range rs {
		rs[i].LastProgress = short.Add(2 * time.Minute)
	}
	back2 := Evaluate(p, rs, nil, unknown, short.Add(2*time.Minute))
	if back2.State != StateUnhealthy || !back2.HeldSince.IsZero() || back2.Serving() {
		t.Errorf("reports back: %+v", back2)
	}
}

func TestNeverHeardCountsNothing(t *testing.T) {
	p := defaultPolicy()
	rs := fleet(2, 1)
	v := Evaluate(p, rs, []string{rs[0].Checker, "x", rs[1].Checker, "y"}, Verdict{}, t0)
	if v.Counts.NeverHeard != 2 || v.Counts.Fresh != 2 || v.State != StateHealthy {
		t.Errorf("got %+v", v)
	}
}

func TestEvaluateDoesNotAllocate(t *testing.T) {
	p := defaultPolicy()
	rs := fleet(9, 4)
	rs[3].LastProgress = t0.Add(-time.Hour)
	rs[5].LastProgress = time.Time{}
	expected := []string{rs[0].Checker, "gone"}
	var v Verdict
	allocs := testing.AllocsPerRun(100, func() { v = Evaluate(p, rs, expected, v, t0) })
	if allocs != 0 {
		t.Errorf("Evaluate allocated %.1f times per call, want 0", allocs)
	}
}

func TestStateText(t *testing.T) {
	for _, s := range []State{StateUnknown, StateHealthy, StateUnhealthy} {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%s round trip: got %v, %v", s, back, err)
		}
	}
	if _, err := State(9).MarshalText(); err == nil {
		t.Error("invalid state marshalled")
	}
	var s State
	err := s.UnmarshalText([]byte("sick"))
	if err == nil || err.Error() != `quorum: invalid state "sick" (want healthy, unhealthy or unknown)` {
		t.Errorf("unmarshal sick: %v", err)
	}
}

func TestCombineEdges(t *testing.T) {
	h, u, x := Verdict{State: StateHealthy}, Verdict{State: StateUnhealthy}, Verdict{State: StateUnknown}
	for _, tc := range []struct {
		name     string
		min      int
		children []Verdict
		inverted bool
		want     State
	}{
		{"no children, AND", 0, nil, false, StateHealthy},
		{"no children, need one", 1, nil, false, StateUnhealthy},
		{"all unknown count healthy", 0, []Verdict{x, x}, false, StateHealthy},
		{"inverted unknowns", 0, []Verdict{x, x}, true, StateUnhealthy},
		{"negative min is AND", -3, []Verdict{h, u}, false, StateUnhealthy},
		{"2 of 3", 2, []Verdict{h, u, x}, false, StateHealthy},
	} {
		v := Combine(tc.min, tc.children, tc.inverted, false, Verdict{}, t0)
		if v.State != tc.want {
			t.Errorf("%s: got %s (%s), want %s", tc.name, v.State, v.Sentence(), tc.want)
		}
	}
}
