package checker

import (
	"fmt"
	"testing"
)

func TestSelfTracker(t *testing.T) {
	type obs struct {
		id      string
		canary  bool
		healthy bool
		reason  Reason
	}
	fail := func(id string) obs { return obs{id, false, false, ReasonTimeout} }
	canaryFail := func(id string) obs { return obs{id, true, false, ReasonUnreachable} }
	tests := []struct {
		name     string
		canaries int
		seq      []obs
		isolated bool
	}{
		{"one dead check never isolates", 0, repeat(fail("a"), 20), false},
		{"one dead target never isolates, however many checks", 0, nil, false},
		{"failures across three checks isolate", 0,
			[]obs{fail("a"), fail("b"), fail("c"), fail("a"), fail("b"), fail("c"), fail("a"), fail("b")}, true},
		{"seven failures are not enough", 0,
			[]obs{fail("a"), fail("b"), fail("c"), fail("a"), fail("b"), fail("c"), fail("a")}, false},
		{"a success resets the run", 0,
			[]obs{fail("a"), fail("b"), fail("c"), fail("a"), {"d", false, true, ReasonOK}, fail("b"), fail("c"), fail("a"), fail("b")}, false},
		{"503s prove the network works", 0, repeat(obs{"a", false, false, ReasonStatus}, 20), false},
		{"refused connections prove the network works", 0, repeat(obs{"a", false, false, ReasonConnectionRefused}, 20), false},
		{"a canary that answers prevents isolation", 1,
			append([]obs{{"k", true, true, ReasonOK}}, fail("a"), fail("b"), fail("c"), fail("a"), fail("b"), fail("c"), fail("a"), fail("b")), false},
		{"every canary down and every probe failing isolates", 2,
			[]obs{canaryFail("k1"), canaryFail("k2"), fail("a"), fail("b"), fail("a"), fail("b"), fail("a"), fail("b")}, true},
		{"one canary of two still answering", 2,
			[]obs{canaryFail("k1"), fail("a"), fail("b"), fail("c"), fail("a"), fail("b"), fail("c"), fail("a"), fail("b")}, false},
		{"recovery on the first success", 0,
			append(repeat3(fail("a"), fail("b"), fail("c")), obs{"a", false, true, ReasonOK}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newSelfTracker(IsolationPolicy{}, tt.canaries)
			for _, o := range tt.seq {
				tr.observe(o.id, "host-"+o.id, o.canary, o.healthy, o.reason)
			}
			if tt.seq == nil {
				for i := range 30 {
					tr.observe(fmt.Sprint("check-", i), "203.0.113.9:443", false, false, ReasonTimeout)
				}
			}
			if tr.isolated != tt.isolated {
				t.Fatalf("isolated = %v, want %v (%+v)", tr.isolated, tt.isolated, tr.health())
			}
			if h := tr.health(); h.Healthy == tr.isolated || (tr.isolated && h.Reason == "") {
				t.Fatalf("health() = %+v inconsistent with isolated=%v", h, tr.isolated)
			}
		})
	}
}

func TestSelfTrackerReportsTransitions(t *testing.T) {
	tr := newSelfTracker(IsolationPolicy{MinFailures: 2, MinTargets: 2}, 0)
	if tr.observe("a", "a", false, false, ReasonTimeout) {
		t.Fatal("changed after one failure")
	}
	if !tr.observe("b", "b", false, false, ReasonTimeout) || !tr.isolated {
		t.Fatal("not isolated after two failures across two checks")
	}
	if tr.observe("a", "a", false, false, ReasonTimeout) {
		t.Fatal("a further failure reported a change")
	}
	if !tr.observe("a", "a", false, true, ReasonOK) || tr.isolated {
		t.Fatal("a success did not end the isolation")
	}
}

func TestSelfTrackerSuspect(t *testing.T) {
	tr := newSelfTracker(IsolationPolicy{}, 0)
	tr.observe("a", "a:80", false, false, ReasonTimeout)
	if tr.suspect() {
		t.Fatal("one failure is suspect")
	}
	tr.observe("a", "a:80", false, false, ReasonTimeout)
	if tr.suspect() {
		t.Fatal("two failures of one target are suspect")
	}
	tr.observe("b", "b:80", false, false, ReasonUnreachable)
	if !tr.suspect() {
		t.Fatal("failures across two targets with nothing answering are not suspect")
	}
	tr.observe("c", "c:80", false, false, ReasonStatus)
	if tr.suspect() {
		t.Fatal("still suspect after a target answered (with a 503)")
	}
	withCanary := newSelfTracker(IsolationPolicy{}, 1)
	withCanary.observe("k", "k:80", true, true, ReasonOK)
	withCanary.observe("a", "a:80", false, false, ReasonTimeout)
	withCanary.observe("b", "b:80", false, false, ReasonTimeout)
	if withCanary.suspect() {
		t.Fatal("suspect while the canary answers")
	}
}

func repeat[T any](x T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}

func repeat3[T any](a, b, c T) []T {
	var out []T
	for range 4 {
		out = append(out, a, b, c)
	}
	return out
}

// TestHoldIsBounded: a checker cut off from two far regions but still reaching its own
// target sees, round after round, "near ok, far-1 timeout, far-2 timeout". far-2's failure is
// suspect every round, because the near success resets the suspicion in between. It may be
// held once; after a success has come since, the next failure must not be held again, or the
// checker would report the far endpoint healthy for as long as the cut lasts.
func TestHoldIsBounded(t *testing.T) {
	tr := newSelfTracker(IsolationPolicy{}, 0)
	var nearHeld, far1Held, far2Held uint64
	holds := map[string]int{}
	for round := range 10 {
		tr.observe("near", "", false, true, ReasonOK)
		if tr.hold(&nearHeld) {
			t.Fatalf("round %d: a success is never held", round)
		}
		tr.observe("far-1", "far-1:80", false, false, ReasonTimeout)
		if tr.hold(&far1Held) {
			holds["far-1"]++
		}
		tr.observe("far-2", "far-2:80", false, false, ReasonTimeout)
		if tr.hold(&far2Held) {
			holds["far-2"]++
		}
	}
	if holds["far-1"] != 0 {
		t.Errorf("far-1's failure was held %d times, though it was never suspect", holds["far-1"])
	}
	if holds["far-2"] != 1 {
		t.Errorf("far-2's failure was held %d times in 10 rounds, want exactly once", holds["far-2"])
	}

	// With nothing answering at all, the hold lasts until isolation withdraws the reports.
	iso := newSelfTracker(IsolationPolicy{}, 0)
	var held uint64
	n := 0
	for i := range 8 {
		iso.observe("x", fmt.Sprintf("t%d:80", i%3), false, false, ReasonTimeout)
		if iso.hold(&held) {
			n++
		}
	}
	if n != 7 || !iso.isolated {
		t.Errorf("with nothing answering: held %d of 8 failures (want 7, all but the first), isolated %v", n, iso.isolated)
	}
}
