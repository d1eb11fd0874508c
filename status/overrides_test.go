package status

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/quorum"
)

// overrideLocation is the test location holding maintenance overrides.
type overrideLocation struct {
	*testLocation
	list []*state.Override
}

func (l overrideLocation) Overrides() []*state.Override { return l.list }

// TestOverridesShown: a check forced unhealthy is marked in the verdicts list and its
// evidence (served as unhealthy, the explanation says who and why first), a drain shows in
// the answer of its record set, and an override that ended shows nowhere.
func TestOverridesShown(t *testing.T) {
	loc := newTestLocation(t)
	demoScenario(loc)
	forced := &state.Override{ID: "a1", Kind: state.OverrideUnhealthy, Check: "web-us-east", Reason: "deploy", Author: "alice",
		Created: t0.Add(-time.Minute), Expires: t0.Add(time.Hour)}
	drain := &state.Override{ID: "b2", Kind: state.OverrideDrain, Zone: "demo.vigil.test.", Name: "www.demo.vigil.test.", Type: "A",
		Value: "198.51.100.1", Reason: "host swap", Author: "bob", Created: t0.Add(-time.Minute), Expires: t0.Add(time.Hour)}
	ended := &state.Override{ID: "c3", Kind: state.OverrideHealthy, Check: "web-eu-west", Reason: "old", Author: "carol",
		Created: t0.Add(-2 * time.Hour), Expires: t0.Add(-time.Hour)}
	a, _, _ := newTestAPI(t, nil, nil)
	a.opts.Location = overrideLocation{loc, []*state.Override{forced, drain, ended}}

	code, body := get(t, a, "/v1/verdicts")
	var list VerdictList
	decodeStrict(t, body, &list)
	if code != 200 || len(list.Overrides) != 2 {
		t.Fatalf("verdicts: %d, overrides %+v", code, list.Overrides)
	}
	for _, c := range list.Checks {
		switch c.ID {
		case "web-us-east":
			if c.Override == nil || c.ServedAsHealthy || !strings.HasPrefix(c.Explanation, "Overridden: check web-us-east forced unhealthy by alice until") {
				t.Errorf("forced check: %+v", c)
			}
		case "web-eu-west":
			if c.Override != nil {
				t.Errorf("an ended override shows: %+v", c)
			}
		}
	}
	_, body = get(t, a, "/v1/verdicts/web-us-east")
	var ev CheckEvidence
	decodeStrict(t, body, &ev)
	if ev.Override == nil || ev.Override.Author != "alice" || ev.Override.Reason != "deploy" {
		t.Errorf("evidence: %+v", ev.VerdictSummary)
	}
	_, body = get(t, a, "/v1/answer?name=www.demo.vigil.test&type=A")
	var ans Answer
	decodeStrict(t, body, &ans)
	if len(ans.Overrides) != 2 || ans.Overrides[0].ID != "a1" || ans.Overrides[1].ID != "b2" {
		t.Errorf("answer overrides: %+v", ans.Overrides)
	}
}

// TestForcedCheckShowsTheServedState: the verdicts list says of a check forced unhealthy
// what DNS acts on (served_state unhealthy, the verdict healthy underneath), counts it apart
// from the checks its verdict decides, lists it among the unhealthy, and the table prints it
// as "unhealthy (forced)" with the override's author and expiry.
func TestForcedCheckShowsTheServedState(t *testing.T) {
	loc := newTestLocation(t)
	demoScenario(loc)
	forced := &state.Override{ID: "a1", Kind: state.OverrideUnhealthy, Check: "web-us-east", Reason: "deploy", Author: "alice",
		Created: t0.Add(-time.Minute), Expires: t0.Add(time.Hour)}
	a, _, _ := newTestAPI(t, nil, nil)
	a.opts.Location = overrideLocation{loc, []*state.Override{forced}}

	_, body := get(t, a, "/v1/verdicts")
	var list VerdictList
	decodeStrict(t, body, &list)
	byID := map[string]VerdictSummary{}
	for _, c := range list.Checks {
		byID[c.ID] = c
	}
	us := byID["web-us-east"]
	if us.State != quorum.StateHealthy || us.ServedState != quorum.StateUnhealthy || us.Override == nil || us.ServedAsHealthy {
		t.Errorf("forced check: state %s, served %s, override %v, served as healthy %v; want the verdict healthy served unhealthy",
			us.State, us.ServedState, us.Override, us.ServedAsHealthy)
	}
	if eu := byID["web-eu-west"]; eu.ServedState != eu.State || eu.Override != nil {
		t.Errorf("a check no override forces: %+v", eu)
	}
	if want := (VerdictTally{Healthy: 1, Unhealthy: 1, Unknown: 1, ForcedUnhealthy: 1}); list.Tally != want {
		t.Errorf("tally %+v, want %+v", list.Tally, want)
	}
	_, body = get(t, a, "/v1/verdicts?state=unhealthy")
	var unhealthy VerdictList
	decodeStrict(t, body, &unhealthy)
	var ids []string
	for _, c := range unhealthy.Checks {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "web-eu-west,web-us-east" {
		t.Errorf("?state=unhealthy lists %v, want the unhealthy check and the one forced unhealthy", ids)
	}

	var out strings.Builder
	if err := WriteVerdicts(&out, list, t0); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	var usRow string
	for l := range strings.Lines(out.String()) {
		if strings.HasPrefix(l, "web-us-east ") {
			usRow = l
		}
	}
	if !strings.Contains(usRow, "unhealthy (forced)") || !strings.Contains(usRow, "unhealthy by alice until 2026") ||
		!strings.Contains(usRow, "verdict healthy") {
		t.Errorf("the forced row does not say it: %q", usRow)
	}
	if !strings.Contains(out.String(), "4 checks: 1 healthy, 1 unhealthy, 1 unknown; 1 forced by an override (1 unhealthy, 0 healthy)") {
		t.Errorf("the header does not count the forced check apart:\n%s", out.String())
	}
	out.Reset()
	_, body = get(t, a, "/v1/verdicts/web-us-east")
	var ev CheckEvidence
	decodeStrict(t, body, &ev)
	if err := WriteCheck(&out, ev, t0); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(first, "check web-us-east: unhealthy (forced by alice until") {
		t.Errorf("check view: %q", first)
	}
}
