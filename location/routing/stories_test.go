package routing_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
)

// The source articles' stories, told end to end through both pure decisions: the demo
// configuration, reports from nine checkers in three regions, each location's quorum verdicts,
// and the DNS answers those verdicts give. Nothing here is simulated but the world: which
// endpoints work and which regions can reach which.

// world is the state of the simulated internet: which endpoints are up and which pairs of
// regions are cut off from each other.
type world struct {
	down map[string]bool    // endpoint region → its endpoint fails
	cut  map[[2]string]bool // {from, to} → from cannot reach to
	// silent checkers make no progress anywhere (their process hung).
	silent map[string]bool
}

func newWorld() *world {
	return &world{down: map[string]bool{}, cut: map[[2]string]bool{}, silent: map[string]bool{}}
}

func (w *world) reaches(from, to string) bool { return from == to || !w.cut[[2]string{from, to}] }

// isolate cuts region r off from every other region, both ways.
func (w *world) isolate(r string, regions []string) {
	for _, o := range regions {
		if o != r {
			w.cut[[2]string{r, o}], w.cut[[2]string{o, r}] = true, true
		}
	}
}

// story runs the demo configuration through quorum and routing at each location.
type story struct {
	t        *testing.T
	doc      *config.Document
	w        *world
	now      time.Time
	heard    map[string]map[string]time.Time // location region → checker → last progress
	verdicts map[string]map[string]quorum.Verdict
}

// endpointRegion: every probed demo check watches the endpoint of the region its id names.
func endpointRegion(checkID string) string { return strings.TrimPrefix(checkID, "web-") }

func checkers(regions []string) [][2]string {
	var cs [][2]string // {id, region}
	for _, r := range regions {
		for i := 1; i <= 3; i++ {
			cs = append(cs, [2]string{fmt.Sprintf("%s-%d", r, i), r})
		}
	}
	return cs
}

func newStory(t *testing.T) *story {
	t.Helper()
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatalf("load demo: %v", err)
	}
	s := &story{t: t, doc: doc, w: newWorld(), now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
		heard: map[string]map[string]time.Time{}, verdicts: map[string]map[string]quorum.Verdict{}}
	for _, r := range doc.Regions {
		s.heard[r] = map[string]time.Time{}
		s.verdicts[r] = map[string]quorum.Verdict{}
	}
	s.tick(5) // everyone hears everyone, every endpoint up
	return s
}

// tick advances the world by n seconds, one second at a time: every location hears the
// checkers it can reach, and re-evaluates every check.
func (s *story) tick(n int) {
	for range n {
		s.now = s.now.Add(time.Second)
		for _, loc := range s.doc.Regions {
			for _, c := range checkers(s.doc.Regions) {
				if !s.w.silent[c[0]] && s.w.reaches(c[1], loc) && s.w.reaches(loc, c[1]) {
					s.heard[loc][c[0]] = s.now
				}
			}
			s.evaluate(loc)
		}
	}
}

// evaluate computes location loc's verdicts for the probed checks, then the calculated ones.
func (s *story) evaluate(loc string) {
	for _, c := range s.doc.Checks {
		if c.Protocol == config.ProtocolCalculated {
			continue
		}
		var reports []quorum.Report
		for _, ck := range checkers(s.doc.Regions) {
			if _, ok := s.heard[loc][ck[0]]; !ok {
				continue
			}
			ep := endpointRegion(c.ID)
			healthy := !s.w.down[ep] && s.w.reaches(ck[1], ep)
			reports = append(reports, quorum.Report{Checker: ck[0], Region: ck[1], Healthy: healthy,
				LastProgress: s.heard[loc][ck[0]]})
		}
		p := quorum.PolicyFor(c, s.doc.Quorum)
		s.verdicts[loc][c.ID] = quorum.Evaluate(p, reports, nil, s.verdicts[loc][c.ID], s.now)
	}
	for _, c := range s.doc.Checks {
		if c.Protocol != config.ProtocolCalculated {
			continue
		}
		var children []quorum.Verdict
		for _, id := range c.Children {
			children = append(children, s.verdicts[loc][id])
		}
		s.verdicts[loc][c.ID] = quorum.Combine(c.MinHealthy, children, c.Inverted, c.Disabled, s.verdicts[loc][c.ID], s.now)
	}
}

// answer is what location loc answers for the record set named name (relative to the zone).
func (s *story) answer(loc, name string) routing.Result {
	s.t.Helper()
	zone := s.doc.Zones[0]
	for i := range zone.RecordSets {
		rs := &zone.RecordSets[i]
		if rs.Name == name || strings.HasPrefix(rs.Name, name+".") {
			health := func(id string) bool { return s.verdicts[loc][id].Serving() }
			res, err := routing.Explain(rs, health, uint64(s.now.Unix()))
			if err != nil {
				s.t.Fatalf("explain %s at %s: %v", name, loc, err)
			}
			return res
		}
	}
	s.t.Fatalf("no record set %q in the demo zone", name)
	return routing.Result{}
}

// expect asserts the sorted values location loc answers for name, and whether last resort was
// in force.
func (s *story) expect(loc, name string, lastResort bool, values ...string) {
	s.t.Helper()
	res := s.answer(loc, name)
	got := res.Values()
	slices.Sort(got)
	slices.Sort(values)
	if !slices.Equal(got, values) || res.LastResort != lastResort {
		s.t.Errorf("%s answers %s with %v (last resort %v), want %v (last resort %v); %s",
			loc, name, got, res.LastResort, values, lastResort, res)
	}
}

const (
	usEast = "192.0.2.1"
	euWest = "198.51.100.1"
	saEast = "203.0.113.1"
)

// Route 53's São Paulo story: an internet partition cuts sa-east off. The sa-east location hears
// only the sa-east checkers, which still reach the sa-east endpoint, so it keeps answering with
// it; us-east and eu-west hear only checkers that cannot reach São Paulo, so they stop. Neither
// side answers with an endpoint its own clients could not reach, and nobody answers nothing.
func TestStoryPartitionSaoPaulo(t *testing.T) {
	s := newStory(t)
	for _, loc := range s.doc.Regions {
		s.expect(loc, "all", false, usEast, euWest, saEast)
	}

	s.w.isolate("sa-east", s.doc.Regions)
	s.tick(10) // longer than the 5s freshness window

	s.expect("sa-east", "all", false, saEast)
	s.expect("us-east", "all", false, usEast, euWest)
	s.expect("eu-west", "all", false, usEast, euWest)
	// www fails over only where us-east is unreachable: at sa-east.
	s.expect("us-east", "www", false, usEast)
	s.expect("sa-east", "www", true, usEast) // both unhealthy there: last resort answers the primary
	if v := s.verdicts["us-east"]["web-sa-east"]; v.Counts.Stale != 3 || v.Counts.Fresh != 6 {
		t.Errorf("us-east counted the unreachable sa-east checkers: %+v", v.Counts)
	}

	s.w.cut = map[[2]string]bool{}
	s.tick(2)
	for _, loc := range s.doc.Regions {
		s.expect(loc, "all", false, usEast, euWest, saEast)
	}
}

// A health check that is wrong everywhere (every endpoint fails it): last resort answers every
// record instead of nothing, and says so.
func TestStoryEveryEndpointFails(t *testing.T) {
	s := newStory(t)
	for _, r := range s.doc.Regions {
		s.w.down[r] = true
	}
	s.tick(3)
	for _, loc := range s.doc.Regions {
		s.expect(loc, "all", true, usEast, euWest, saEast)
		if res := s.answer(loc, "api"); len(res.Answer) != 1 || !res.LastResort {
			t.Errorf("%s: weighted api with every endpoint down: %s", loc, res)
		}
		s.expect(loc, "static", false, "192.0.2.100")
	}
}

// An overload cascade: one of three endpoints fails and its load moves to the other two, which
// then fail as well. Answers shrink to two, then all three come back under last resort rather
// than the zone answering nothing; when they recover, last resort ends.
func TestStoryOverloadCascade(t *testing.T) {
	s := newStory(t)
	s.w.down["sa-east"] = true
	s.tick(2)
	for _, loc := range s.doc.Regions {
		s.expect(loc, "all", false, usEast, euWest)
		if v := s.verdicts[loc]["web-majority"]; v.State != quorum.StateHealthy {
			t.Errorf("%s: two of three up, majority check is %s", loc, v.State)
		}
	}
	s.w.down["us-east"], s.w.down["eu-west"] = true, true
	s.tick(2)
	for _, loc := range s.doc.Regions {
		s.expect(loc, "all", true, usEast, euWest, saEast)
		if v := s.verdicts[loc]["web-majority"]; v.State != quorum.StateUnhealthy {
			t.Errorf("%s: all down, majority check is %s", loc, v.State)
		}
	}
	s.w.down = map[string]bool{}
	s.tick(2)
	for _, loc := range s.doc.Regions {
		s.expect(loc, "all", false, usEast, euWest, saEast)
	}
}

// A checker whose reports stop (its process hangs): its last report goes stale and counts
// neither way, so no verdict changes; when every checker goes silent, locations hold their
// verdicts for the hold time, then fail open as unknown.
func TestStoryCheckerGoesSilent(t *testing.T) {
	s := newStory(t)
	s.w.down["eu-west"] = true
	s.tick(2)
	s.w.silent["us-east-1"] = true
	s.tick(10)
	for _, loc := range s.doc.Regions {
		v := s.verdicts[loc]["web-us-east"]
		if v.State != quorum.StateHealthy || v.Counts.Stale != 1 || v.Counts.Fresh != 8 {
			t.Errorf("%s: one silent checker: %s %+v", loc, v.State, v.Counts)
		}
		s.expect(loc, "all", false, usEast, saEast)
	}

	for _, c := range checkers(s.doc.Regions) {
		s.w.silent[c[0]] = true
	}
	s.tick(6) // past the 5s freshness window, within the 10s hold
	for _, loc := range s.doc.Regions {
		if v := s.verdicts[loc]["web-eu-west"]; v.State != quorum.StateUnhealthy || !v.Held() {
			t.Errorf("%s: all silent within hold: web-eu-west %s held=%v", loc, v.State, v.Held())
		}
		s.expect(loc, "all", false, usEast, saEast)
	}
	s.tick(10) // past the hold
	for _, loc := range s.doc.Regions {
		if v := s.verdicts[loc]["web-eu-west"]; v.State != quorum.StateUnknown {
			t.Errorf("%s: all silent past hold: web-eu-west %s, want unknown", loc, v.State)
		}
		s.expect(loc, "all", false, usEast, euWest, saEast) // unknown is served: fail open
	}
}
