package oracle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/regions"
)

// The demo's addresses: each region's endpoint, and the record without a check.
const (
	us     = "192.0.2.1"
	eu     = "198.51.100.1"
	sa     = "203.0.113.1"
	static = "192.0.2.100"
)

// demoRegions are the demo document's regions.
var demoRegions = []string{"us-east", "eu-west", "sa-east"}

// t0 is when every story's network is ready.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// story is a recorded run of the demo network told by hand: per region three checkers, one
// location and one target; the demo's document (probes every 1s, 3 failures, 2 successes,
// freshness 5s, hold 10s).
type story struct {
	t   testing.TB
	run Run
}

// newStory returns a story on the demo network that ends at end seconds.
func newStory(t testing.TB, end float64) *story {
	t.Helper()
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := &story{t: t, run: Run{Document: doc, Start: t0, End: sec(end)}}
	topo := &s.run.Topology
	topo.Regions = demoRegions
	topo.Checks = map[string]string{}
	for _, r := range demoRegions {
		topo.Targets = append(topo.Targets, Target{Name: r, Region: r})
		topo.Checks["web-"+r] = r
		topo.Nodes = append(topo.Nodes, Node{Name: r, Region: r, Roles: []Role{RoleLocation}})
		for i := 1; i <= 3; i++ {
			topo.Nodes = append(topo.Nodes, Node{Name: fmt.Sprintf("%s-checker-%d", r, i), Region: r, Roles: []Role{RoleChecker}})
		}
	}
	return s
}

// sec returns t0 plus s seconds.
func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// event adds an event at s seconds.
func (s *story) event(at float64, e Event) {
	e.At = sec(at)
	s.run.Events = append(s.run.Events, e)
}

// serve records that loc answered name (a label of demo.vigil.test) with values from
// second from to second to: one query every 100ms, each in flight for 2ms.
func (s *story) serve(loc, name string, from, to float64, values ...string) {
	fqdn := name + ".demo.vigil.test."
	off := float64(slices.Index(demoRegions, loc))*0.01 + float64(len(name))*0.001
	for at := from + off; at < to; at += 0.1 {
		q := Query{Location: loc, Name: fqdn, Type: config.TypeA, Sent: sec(at), Received: sec(at + 0.002), Values: slices.Sorted(slices.Values(values))}
		s.run.Queries = append(s.run.Queries, q)
	}
}

// replace replaces the answers of loc for name between from and to by q's outcome.
func (s *story) replace(loc, name string, from, to float64, change func(*Query)) {
	fqdn := name + ".demo.vigil.test."
	for i := range s.run.Queries {
		q := &s.run.Queries[i]
		if q.Location == loc && q.Name == fqdn && !q.Sent.Before(sec(from)) && q.Sent.Before(sec(to)) {
			change(q)
		}
	}
}

// steady records that loc answered the names without a routing change (static, and api and
// www with us-east healthy) from from to to.
func (s *story) steady(loc string, from, to float64) {
	s.serve(loc, "static", from, to, static)
	s.serve(loc, "www", from, to, us)
	s.serve(loc, "api", from, to, us)
}

// judge judges the story with the default bounds, and logs the report.
func (s *story) judge() Report {
	s.t.Helper()
	rep, err := Judge(s.run, DefaultBounds())
	if err != nil {
		s.t.Fatal(err)
	}
	var b strings.Builder
	_ = rep.Write(&b)
	s.t.Logf("report:\n%s", b.String())
	return rep
}

// saoPaulo is Route 53's São Paulo story: sa-east is cut off from both other regions at 10s
// and healed at 30s. The São Paulo location, hearing only São Paulo's checkers, still serves
// São Paulo's endpoint and drops the others (its checkers cannot reach them); Ohio and
// Ireland, hearing only checkers that cannot reach São Paulo, drop São Paulo's. After the
// heal every endpoint comes back everywhere.
func saoPaulo(t *testing.T) *story {
	s := newStory(t, 50)
	s.event(10, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "sa-east"}})
	s.event(30, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Heal, A: "sa-east"}})
	for _, l := range []string{"us-east", "eu-west"} {
		s.serve(l, "all", 0, 15.2, us, eu, sa)
		s.serve(l, "all", 15.2, 32, us, eu)
		s.serve(l, "all", 32, 50, us, eu, sa)
		s.steady(l, 0, 50)
	}
	s.serve("sa-east", "all", 0, 14, us, eu, sa)
	s.serve("sa-east", "all", 14, 32.5, sa)
	s.serve("sa-east", "all", 32.5, 50, us, eu, sa)
	s.serve("sa-east", "static", 0, 50, static)
	// www: us-east and eu-west both unhealthy at São Paulo: last resort, the primary.
	s.serve("sa-east", "www", 0, 50, us)
	s.serve("sa-east", "api", 0, 14, us)
	s.serve("sa-east", "api", 14, 32.5, sa)
	s.serve("sa-east", "api", 32.5, 50, us)
	return s
}

func TestSaoPauloPartition(t *testing.T) {
	rep := saoPaulo(t).judge()
	if !rep.OK() || rep.Answered != rep.Judged || rep.Judged == 0 {
		t.Fatalf("a correct history failed: %d wrong, %d flips, %d of %d answered", len(rep.Wrong), len(rep.Flips), rep.Answered, rep.Judged)
	}
	if len(rep.Timings) != 2 || rep.Timings[0].Repair || !rep.Timings[1].Repair {
		t.Fatalf("timings %+v: want the cut's detection and the heal's recovery", rep.Timings)
	}
	det := rep.Timings[0]
	if len(det.ByLocation) != 3 || len(det.Missing) > 0 || det.Longest() > det.Bound {
		t.Errorf("detection %v (missing %v), bound %v: want every location within it", det.ByLocation, det.Missing, det.Bound)
	}
	// us-east dropped sa-east from "all" at 15.2s: 5.2s after the cut, measured by the answer.
	if d := det.ByLocation["us-east"]; d < 5200*time.Millisecond || d > 5300*time.Millisecond {
		t.Errorf("us-east's detection %v, want the first answer without sa-east (5.2s)", d)
	}
	if rec := rep.Timings[1]; len(rec.ByLocation) != 3 || rec.Longest() > rec.Bound {
		t.Errorf("recovery %v, bound %v", rec.ByLocation, rec.Bound)
	}
}

// A location that drops a healthy endpoint its checkers still see is caught, and so is its
// return: Ohio dropping Ireland in the middle of the São Paulo partition.
func TestSaoPauloPlantedWrongAnswer(t *testing.T) {
	s := saoPaulo(t)
	s.replace("us-east", "all", 20, 21, func(q *Query) { q.Values = []string{us} })
	rep := s.judge()
	if len(rep.Wrong) != 10 {
		t.Fatalf("%d wrong answers, want the 10 that dropped eu-west", len(rep.Wrong))
	}
	w := rep.Wrong[0]
	if w.Query.Location != "us-east" || len(w.Around) == 0 || len(w.InForce) == 0 || !strings.Contains(strings.Join(w.Allowed, " "), "web-eu-west healthy") {
		t.Errorf("finding without its history: %+v", w)
	}
	if len(rep.Flips) != 2 {
		t.Errorf("%d flips, want eu-west leaving and coming back: %v", len(rep.Flips), rep.Flips)
	}
	if rep.OK() {
		t.Error("the run passed")
	}
}

// The non-transitive partition: us-east–sa-east cut while eu-west reaches both.
// Their reports still reach each other through eu-west, and every endpoint stays up: no
// location may drop anything.
func nonTransitive(t *testing.T) *story {
	s := newStory(t, 40)
	s.event(10, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "us-east", B: "sa-east"}})
	s.event(30, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Heal, A: "us-east", B: "sa-east"}})
	for _, l := range demoRegions {
		s.serve(l, "all", 0, 40, us, eu, sa)
		s.steady(l, 0, 40)
	}
	return s
}

func TestNonTransitiveCut(t *testing.T) {
	rep := nonTransitive(t).judge()
	if !rep.OK() || len(rep.Timings) != 0 || len(rep.Unsure) != 0 {
		t.Fatalf("%d wrong, %d flips, timings %v, unsure %v: want nothing to change and nothing unsure", len(rep.Wrong), len(rep.Flips), rep.Timings, rep.Unsure)
	}
}

// A planted drop in the non-transitive partition, as real processes without gossip's relays
// and repairs make it: us-east drops sa-east's healthy address for about 3s, and sa-east
// drops us-east's for about 1s.
func TestNonTransitivePlantedDrop(t *testing.T) {
	s := nonTransitive(t)
	s.replace("us-east", "all", 13, 16, func(q *Query) { q.Values = []string{eu, us} })
	s.replace("sa-east", "all", 14, 15, func(q *Query) { q.Values = []string{eu, sa} })
	rep := s.judge()
	if len(rep.Wrong) != 40 {
		t.Errorf("%d wrong answers, want 30 at us-east and 10 at sa-east", len(rep.Wrong))
	}
	if len(rep.Flips) != 4 {
		t.Errorf("%d flips, want two at each location", len(rep.Flips))
	}
}

// A one-way cut us-east -> sa-east breaks probes both ways (TCP needs both), but the reports
// still flow through eu-west: no answer changes.
func TestOneWayCut(t *testing.T) {
	s := newStory(t, 40)
	s.event(10, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.CutOneWay, A: "us-east", B: "sa-east"}})
	s.event(30, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Heal}})
	for _, l := range demoRegions {
		s.serve(l, "all", 0, 40, us, eu, sa)
		s.steady(l, 0, 40)
	}
	rep := s.judge()
	if !rep.OK() || len(rep.Timings) != 0 {
		t.Fatalf("%d wrong, %d flips, timings %v", len(rep.Wrong), len(rep.Flips), rep.Timings)
	}
}

// With eu-west cut off as well nothing relays, and whether us-east hears sa-east depends on
// gossip over a link cut the other way, which the model does not decide: it says so.
func TestOneWayCutUnsure(t *testing.T) {
	s := newStory(t, 20)
	s.event(10, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "eu-west"}})
	s.event(10, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.CutOneWay, A: "us-east", B: "sa-east"}})
	s.serve("us-east", "all", 0, 20, us, eu, sa)
	rep := s.judge()
	want := "gossip sa-east->us-east over a link cut the other way"
	if len(rep.Unsure) != 1 || rep.Unsure[0].Why != want || !rep.Unsure[0].From.Equal(sec(10)) {
		t.Fatalf("unsure %+v: want %q from 10s", rep.Unsure, want)
	}
}

// Every target fails: no record is healthy, so every record set answers all its records
// (last resort) rather than nothing; "all" never changes, and www may pass through eu-west
// while the checks fail one by one.
func TestAllTargetsDownLastResort(t *testing.T) {
	s := newStory(t, 40)
	for _, r := range demoRegions {
		s.event(10, Event{Kind: EventTargetDown, Target: r})
	}
	for _, r := range demoRegions {
		s.event(25, Event{Kind: EventTargetUp, Target: r})
	}
	for _, l := range demoRegions {
		s.serve(l, "all", 0, 40, us, eu, sa)
		s.serve(l, "static", 0, 40, static)
		s.serve(l, "www", 0, 13.2, us)
		s.serve(l, "www", 13.2, 13.6, eu)
		s.serve(l, "www", 13.6, 27, us)
		s.serve(l, "www", 27, 27.3, eu)
		s.serve(l, "www", 27.3, 40, us)
		s.serve(l, "api", 0, 40, us)
	}
	rep := s.judge()
	if !rep.OK() || rep.LastResort == 0 {
		t.Fatalf("%d wrong, %d flips, %d answers in last resort", len(rep.Wrong), len(rep.Flips), rep.LastResort)
	}
	// An empty answer is never allowed, nor NXDOMAIN for a name with records.
	s.replace("us-east", "all", 20, 20.2, func(q *Query) { q.Values = nil })
	s.replace("eu-west", "all", 20, 20.2, func(q *Query) { q.Rcode = 3; q.Values = nil })
	if rep = s.judge(); len(rep.Wrong) != 4 {
		t.Fatalf("%d wrong, want the 2 empty answers and the 2 NXDOMAIN", len(rep.Wrong))
	}
}

// A planted flap: sa-east cut off from both, eu-west drops sa-east, puts it back for a
// while, then drops it again. Each answer on its own is allowed (within the transition
// window either is), but the second and third changes are more than one cut can make.
func TestIsolationPlantedFlap(t *testing.T) {
	s := newStory(t, 30)
	s.event(10, Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "sa-east"}})
	for _, l := range demoRegions {
		s.steady(l, 0, 30)
	}
	s.serve("us-east", "all", 0, 15, us, eu, sa)
	s.serve("us-east", "all", 15, 30, us, eu)
	s.serve("sa-east", "all", 0, 14, us, eu, sa)
	s.serve("sa-east", "all", 14, 30, sa)
	s.replace("sa-east", "api", 14, 30, func(q *Query) { q.Values = []string{sa} })
	s.serve("eu-west", "all", 0, 14, us, eu, sa)
	s.serve("eu-west", "all", 14, 14.5, us, eu)
	s.serve("eu-west", "all", 14.5, 15.5, us, eu, sa)
	s.serve("eu-west", "all", 15.5, 30, us, eu)
	rep := s.judge()
	if len(rep.Wrong) != 0 {
		t.Errorf("%d wrong answers, want none: each is allowed within the window", len(rep.Wrong))
	}
	if len(rep.Flips) != 2 || rep.Flips[0].Query.Location != "eu-west" || !strings.Contains(rep.Flips[0].Reason, "one change more") {
		t.Fatalf("flips %v: want sa-east's return and second drop at eu-west", rep.Flips)
	}
}

// A killed location's unanswered queries are excused until it has started again; others
// count, against a bound.
func TestUnanswered(t *testing.T) {
	s := newStory(t, 40)
	s.event(10, Event{Kind: EventKill, Node: "eu-west"})
	s.event(20, Event{Kind: EventStart, Node: "eu-west"})
	for _, l := range demoRegions {
		s.serve(l, "all", 0, 40, us, eu, sa)
		s.steady(l, 0, 40)
	}
	s.replace("eu-west", "all", 10, 24, func(q *Query) { q.TimedOut, q.Values = true, nil })
	s.replace("us-east", "all", 30, 30.2, func(q *Query) { q.Rcode, q.Values = 2, nil })
	rep := s.judge()
	u := rep.Unanswered
	if u["eu-west"].Counted != 0 || u["eu-west"].Excused != 140 {
		t.Errorf("eu-west: %+v, want 140 excused (killed, then starting), none counted", u["eu-west"])
	}
	if u["us-east"].Counted != 2 || u["us-east"].Bound != 1 || rep.OK() {
		t.Errorf("us-east: %+v, want 2 SERVFAIL counted over a bound of 1, and the run failed", u["us-east"])
	}
	if len(rep.Wrong) != 0 || len(rep.Flips) != 0 {
		t.Errorf("%d wrong, %d flips: want none (a restarted location serves what it may)", len(rep.Wrong), len(rep.Flips))
	}
}

// A target that comes back while its failure's transition window is still open: recovery is
// still measured from the answers, once the location had shown the failure.
func TestRecoveryWithinDetectionWindow(t *testing.T) {
	s := newStory(t, 30)
	s.event(10, Event{Kind: EventTargetDown, Target: "us-east"})
	s.event(14, Event{Kind: EventTargetUp, Target: "us-east"})
	for _, l := range demoRegions {
		s.serve(l, "static", 0, 30, static)
		s.serve(l, "www", 0, 13.3, us)
		s.serve(l, "www", 13.3, 16.2, eu)
		s.serve(l, "www", 16.2, 30, us)
	}
	rep := s.judge()
	if !rep.OK() || len(rep.Timings) != 2 {
		t.Fatalf("%d wrong, %d flips, %d timings", len(rep.Wrong), len(rep.Flips), len(rep.Timings))
	}
	rec := rep.Timings[1]
	if d := rec.ByLocation["eu-west"]; !rec.Repair || len(rec.Missing) > 0 || d < 2200*time.Millisecond || d > 2400*time.Millisecond {
		t.Errorf("recovery %v (missing %v), want about 2.2s everywhere", rec.ByLocation, rec.Missing)
	}
}

// The cascade: one target fails, then another while the first failure's window is still
// open, then the third: each detection is measured from the first answer the earlier states
// could not give (the last one's: "all" in last resort).
func TestCascadeDetection(t *testing.T) {
	s := newStory(t, 20)
	s.event(0.5, Event{Kind: EventTargetDown, Target: "us-east"})
	s.event(3.75, Event{Kind: EventTargetDown, Target: "eu-west"})
	s.event(4.75, Event{Kind: EventTargetDown, Target: "sa-east"})
	for _, l := range demoRegions {
		s.serve(l, "all", 0, 3.7, us, eu, sa)
		s.serve(l, "all", 3.7, 6.45, eu, sa)
		s.serve(l, "all", 6.45, 7.75, sa)
		s.serve(l, "all", 7.75, 20, us, eu, sa)
	}
	rep := s.judge()
	if !rep.OK() || len(rep.Timings) != 3 {
		t.Fatalf("%d wrong, %d flips, %d timings", len(rep.Wrong), len(rep.Flips), len(rep.Timings))
	}
	for i, want := range []time.Duration{3200 * time.Millisecond, 2700 * time.Millisecond, 3000 * time.Millisecond} {
		if d := rep.Timings[i].ByLocation["us-east"]; d < want || d > want+100*time.Millisecond {
			t.Errorf("detection of %v: %v, want %v", rep.Timings[i].Event, d, want)
		}
	}
}

// The harness stalled: every window allows the stalls' total time more, and a query that went
// unanswered while one lasted is excused. The same answers without the stalls are wrong.
func TestStalls(t *testing.T) {
	tell := func(stalls []Stall) Report {
		s := newStory(t, 30)
		s.event(10, Event{Kind: EventTargetDown, Target: "us-east"})
		for _, l := range demoRegions {
			s.serve(l, "static", 0, 30, static)
			s.serve(l, "www", 0, 19, us) // us-east's address served 9s after its target failed
			s.serve(l, "www", 19, 30, eu)
		}
		s.replace("eu-west", "static", 12, 12.5, func(q *Query) { q.TimedOut, q.Values = true, nil })
		s.run.Stalls = stalls
		return s.judge()
	}
	rep := tell(nil)
	if len(rep.Wrong) == 0 || rep.Unanswered["eu-west"].Counted != 5 || rep.OK() {
		t.Fatalf("without stalls: %d wrong, unanswered at eu-west %+v; want wrong answers and 5 counted", len(rep.Wrong), rep.Unanswered["eu-west"])
	}
	rep = tell([]Stall{{From: sec(11), To: sec(13)}, {From: sec(15), To: sec(17)}})
	if !rep.OK() || rep.Stalls != 2 || rep.Stalled != 4*time.Second || rep.Unanswered["eu-west"].Excused != 5 {
		t.Errorf("with 4s of stalls: %d wrong, %d flips, unanswered at eu-west %+v, stalls %d (%v); want none wrong and 5 excused",
			len(rep.Wrong), len(rep.Flips), rep.Unanswered["eu-west"], rep.Stalls, rep.Stalled)
	}
	s := newStory(t, 30)
	s.run.Stalls = []Stall{{From: sec(2), To: sec(1)}}
	if _, err := Judge(s.run, DefaultBounds()); err == nil || !strings.Contains(err.Error(), "stall 0 ends before it begins") {
		t.Errorf("a stall that ends before it begins: %v", err)
	}
}

// A check whose probes every checker failed at once because the harness stalled longer than
// the probe timeout: web-eu-west leaves eu-west's answers at 12s and comes back at 14s with no
// event. Without a stall, or after one shorter than the timeout (500ms) or long past, that is a
// wrong answer and a flip; after one as long as the timeout it is excused and said so. What a
// starved check does not explain (the static record answered with another address) still
// counts.
func TestStarvedCheck(t *testing.T) {
	tell := func(stalls []Stall, plant bool) Report {
		s := newStory(t, 30)
		for _, l := range demoRegions {
			s.steady(l, 0, 30)
			s.serve(l, "all", 0, 12, us, eu, sa)
			s.serve(l, "all", 12, 14, us, sa)
			s.serve(l, "all", 14, 30, us, eu, sa)
		}
		if plant {
			s.replace("eu-west", "static", 12, 12.5, func(q *Query) { q.Values = []string{us} })
		}
		s.run.Stalls = stalls
		return s.judge()
	}
	for _, c := range []struct {
		name   string
		stalls []Stall
	}{
		{"no stall", nil},
		{"a stall shorter than the timeout", []Stall{{From: sec(11.5), To: sec(11.9)}}},
		{"a stall long before", []Stall{{From: sec(2), To: sec(2.7)}}},
	} {
		rep := tell(c.stalls, false)
		if rep.OK() || len(rep.Wrong) == 0 || len(rep.Flips) == 0 || len(rep.Excused) != 0 {
			t.Errorf("%s: %d wrong, %d flips, %d excused; want wrong answers and flips, none excused", c.name, len(rep.Wrong), len(rep.Flips), len(rep.Excused))
		}
	}
	stall := []Stall{{From: sec(11.5), To: sec(12.2)}}
	rep := tell(stall, false)
	wrong, flips := rep.ExcusedTotal()
	if !rep.OK() || wrong == 0 || flips != 3*2 {
		t.Errorf("after a 700ms stall: %d wrong, %d flips, excused %d wrong and %d flips; want all excused, two flips per location", len(rep.Wrong), len(rep.Flips), wrong, flips)
	}
	var b strings.Builder
	_ = rep.Write(&b)
	if !strings.Contains(b.String(), fmt.Sprintf("excused: %d wrong answers and %d flips after stalls ≥ probe timeout", wrong, flips)) {
		t.Errorf("the report does not say what it excused:\n%s", b.String())
	}
	rep = tell(stall, true)
	if rep.OK() || len(rep.Wrong) != 5 || !strings.Contains(rep.Wrong[0].Query.Name, "static") {
		t.Errorf("a planted static answer during the stall: %d wrong (%v); want the 5 planted ones", len(rep.Wrong), rep.Wrong)
	}
}
