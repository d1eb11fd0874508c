package status

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/wire"
)

// overrideLocation is the test location holding maintenance overrides.
type overrideLocation struct {
	*testLocation
	list []*wire.Override
}

func (l overrideLocation) Overrides() []*wire.Override { return l.list }

// TestOverridesShown: a check forced unhealthy is marked in the verdicts list and its
// evidence (served as unhealthy, the explanation says who and why first), a drain shows in
// the answer of its record set, and an override that ended shows nowhere.
func TestOverridesShown(t *testing.T) {
	loc := newTestLocation(t)
	demoScenario(loc)
	forced := &wire.Override{ID: "a1", Kind: wire.OverrideUnhealthy, Check: "web-us-east", Reason: "deploy", Author: "alice",
		Created: t0.Add(-time.Minute), Expires: t0.Add(time.Hour)}
	drain := &wire.Override{ID: "b2", Kind: wire.OverrideDrain, Zone: "demo.vigil.test.", Name: "www.demo.vigil.test.", Type: "A",
		Value: "198.51.100.1", Reason: "host swap", Author: "bob", Created: t0.Add(-time.Minute), Expires: t0.Add(time.Hour)}
	ended := &wire.Override{ID: "c3", Kind: wire.OverrideHealthy, Check: "web-eu-west", Reason: "old", Author: "carol",
		Created: t0.Add(-2 * time.Hour), Expires: t0.Add(-time.Hour)}
	a, _, _ := newTestAPI(t, nil, nil)
	a.opts.Location = overrideLocation{loc, []*wire.Override{forced, drain, ended}}

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
