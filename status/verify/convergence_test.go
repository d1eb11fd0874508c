package verify

import (
	"testing"
	"time"
)

// TestTracker follows one failover: three locations change verdict one after another, the last
// is seen answering late once; the convergence runs from the first change to that last
// evidence of a late answer (seen agreeing later still), measured once all have agreed for
// the settle time.
func TestTracker(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tr := newTracker(3*time.Second, time.Minute, time.Hour, 10)
	ob := func(loc, key string, changed float64, agrees bool) Observation {
		o := Observation{Location: loc, Key: key, Agrees: agrees}
		if changed >= 0 {
			o.ChangedAt = at(changed)
		}
		return o
	}
	steps := []struct {
		now  float64
		obs  []Observation
		want float64 // <0: none closes
	}{
		{0, []Observation{ob("a", "p", -1, true), ob("b", "p", -1, true), ob("c", "p", -1, true)}, -1},
		// a changed at 9.5 and answers accordingly; b and c not changed yet.
		{10, []Observation{ob("a", "s", 9.5, true), ob("b", "p", -1, true), ob("c", "p", -1, true)}, -1},
		// b changed at 10.2; c changed at 10.4 but still answers the old record at 11.
		{11, []Observation{ob("a", "s", 9.5, true), ob("b", "s", 10.2, true), {Location: "c", Key: "s", ChangedAt: at(10.4), Disagreed: true}}, -1},
		{12, []Observation{ob("a", "s", 9.5, true), ob("b", "s", 10.2, true), ob("c", "", -1, false)}, -1},
		{13, []Observation{ob("a", "s", 9.5, true), ob("b", "s", 10.2, true), ob("c", "s", 10.4, true)}, -1},
		{15, []Observation{ob("a", "s", 9.5, true), ob("b", "s", 10.2, true), ob("c", "s", 10.4, true)}, -1},
		{16, []Observation{ob("a", "s", 9.5, true), ob("b", "s", 10.2, true), ob("c", "s", 10.4, true)}, 1.5},
		{17, []Observation{ob("a", "s", 9.5, true), ob("b", "s", 10.2, true), ob("c", "s", 10.4, true)}, -1},
	}
	for _, s := range steps {
		c, dropped := tr.observe("www A", s.obs, at(s.now))
		if dropped {
			t.Fatalf("at %v: dropped", s.now)
		}
		switch {
		case s.want < 0 && c != nil:
			t.Fatalf("at %v: closed %+v", s.now, c)
		case s.want >= 0 && (c == nil || c.Seconds != s.want || c.SeenSeconds != 3.5 || c.Changed != 3 || !c.Started.Equal(at(9.5))):
			t.Fatalf("at %v: %+v, want %vs from 9.5 (seen after 3.5s) over 3 locations", s.now, c, s.want)
		}
		if s.now == 12 && (len(tr.pending()) != 1 || tr.pending()[0].Waiting[0] != "c") {
			t.Fatalf("pending at 12: %+v", tr.pending())
		}
	}
}

// TestTrackerBounds: an episode that never converges is dropped after maxAge; no more than
// maxSets record sets are held; unobserved ones are forgotten.
func TestTrackerBounds(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	tr := newTracker(time.Second, 10*time.Second, time.Minute, 2)
	tr.observe("x", []Observation{{Location: "a", Key: "1", Agrees: true}}, t0)
	tr.observe("x", []Observation{{Location: "a", Key: "2", Agrees: false}}, t0.Add(time.Second))
	if _, dropped := tr.observe("x", []Observation{{Location: "a", Key: "2"}}, t0.Add(5*time.Second)); dropped {
		t.Fatal("dropped early")
	}
	if _, dropped := tr.observe("x", []Observation{{Location: "a", Key: "2"}}, t0.Add(12*time.Second)); !dropped || tr.isOpen("x") {
		t.Fatal("not dropped after maxAge")
	}
	tr.observe("y", nil, t0.Add(12*time.Second))
	tr.observe("z", nil, t0.Add(12*time.Second))
	if len(tr.sets) != 2 {
		t.Fatalf("%d sets held, bound 2", len(tr.sets))
	}
	tr.sweep(t0.Add(2 * time.Minute))
	if len(tr.sets) != 0 {
		t.Fatalf("%d sets held after forget", len(tr.sets))
	}
}
