package oracle

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

// chaosStory returns a story of d seconds with a random fault or repair every 2 to 5
// seconds (the shape of vigil sim chaos), every location answering "all" with every address
// throughout.
func chaosStory(t testing.TB, seed uint64, d float64) *story {
	s := newStory(t, d)
	rng := rand.New(rand.NewPCG(seed, 1))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	two := func() (string, string) {
		a := pick(demoRegions)
		for {
			if b := pick(demoRegions); b != a {
				return a, b
			}
		}
	}
	for at := 1.0; at < d-10; at += 2 + 3*rng.Float64() {
		a, b := two()
		var e Event
		switch rng.IntN(9) {
		case 0:
			e = Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: a, B: b}}
		case 1:
			e = Event{Kind: EventLink, Link: regions.Fault{Kind: regions.CutOneWay, A: a, B: b}}
		case 2:
			e = Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Loss, A: a, B: b, Loss: float64(1 + rng.IntN(20))}}
		case 3:
			e = Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Latency, A: a, B: b, Delay: time.Duration(30+rng.IntN(220)) * time.Millisecond, Jitter: 50 * time.Millisecond}}
		case 4:
			e = Event{Kind: EventTargetDown, Target: a}
		case 5:
			e = Event{Kind: EventTargetUp, Target: a}
		case 6:
			e = Event{Kind: EventKill, Node: fmt.Sprintf("%s-checker-%d", a, 1+rng.IntN(3))}
		case 7:
			e = Event{Kind: EventStart, Node: fmt.Sprintf("%s-checker-%d", a, 1+rng.IntN(3))}
		default:
			e = Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Heal}}
		}
		s.event(at, e)
	}
	for _, l := range demoRegions {
		s.serve(l, "all", 0, d, us, eu, sa)
		s.steady(l, 0, d)
	}
	return s
}

// A random history of faults never makes the judge fail to judge, and whatever it finds
// comes with its history.
func TestJudgeRandomFaults(t *testing.T) {
	for seed := range uint64(5) {
		s := chaosStory(t, seed, 120)
		rep, err := Judge(s.run, DefaultBounds())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if rep.Judged != len(s.run.Queries) {
			t.Errorf("seed %d: %d of %d queries judged", seed, rep.Judged, len(s.run.Queries))
		}
		for _, f := range append(rep.Wrong, rep.Flips...) {
			if len(f.Around) == 0 || len(f.InForce) == 0 || f.Reason == "" {
				t.Fatalf("seed %d: a finding without its history: %+v", seed, f)
			}
		}
	}
}

// BenchmarkJudge judges a 10-minute chaos history: about 160 faults, 3 locations asked
// 4 names every 100 ms (72,000 queries).
func BenchmarkJudge(b *testing.B) {
	s := chaosStory(b, 1, 600)
	b.ReportMetric(float64(len(s.run.Queries)), "queries/op")
	for b.Loop() {
		if _, err := Judge(s.run, DefaultBounds()); err != nil {
			b.Fatal(err)
		}
	}
}
