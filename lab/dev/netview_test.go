package dev

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/location/history"
	"github.com/vigil-dns/vigil/status"
)

// TestDevNetworkViewAndHistory: with sa-east cut off, the network view of
// any location shows sa-east's location disagreeing with the others, and why (it hears only
// sa-east's checkers); after the heal they agree again, and the history of each location
// shows both changes, the cut's and the heal's, within the time of each.
func TestDevNetworkViewAndHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a dev network through a cut and a heal")
	}
	n := startTest(t)
	regions := n.cfg.Regions
	// Every location must have heard every expected checker before the cut: a location that
	// has heard only its own region's reports when the cut comes has nothing to hold stale
	// (a cut 0.4 s after start can find sa-east with one report of web-us-east).
	eventually(t, 30*time.Second, "every check healthy at every location, every checker heard", func() (bool, string) {
		for _, r := range regions {
			vs := n.Verdicts(r)
			if len(vs) != len(n.cfg.Document.Checks) {
				return false, fmt.Sprintf("%s: %d verdicts", r, len(vs))
			}
			for id, v := range vs {
				if v.State.String() != "healthy" {
					return false, fmt.Sprintf("%s: %s is %s", r, id, v.State)
				}
				if c := v.Counts; c.NeverHeard != 0 || c.Stale != 0 {
					return false, fmt.Sprintf("%s: %s has %d never heard, %d stale", r, id, c.NeverHeard, c.Stale)
				}
			}
		}
		return true, ""
	})
	// The view merges digests each location caches for up to 2 s, so one made while a
	// location was still starting (hearing no checker yet) may be served just after.
	us := status.Client{Base: "http://" + n.HTTPAddr("us-east")}
	eventually(t, 10*time.Second, "before the cut, us-east's view of 3 locations agreeing", func() (bool, string) {
		v, err := us.Network(t.Context(), "", "", "", 0)
		if err != nil {
			return false, err.Error()
		}
		return len(v.Locations) == 3 && v.Disagreements == 0,
			fmt.Sprintf("%d locations, %d disagreements: %+v", len(v.Locations), v.Disagreements, v.Locations)
	})

	c := Client{BaseURL: n.ControlURL()}
	cutAt := time.Now()
	if _, err := c.Cut(t.Context(), "sa-east"); err != nil {
		t.Fatal(err)
	}
	// Every location's view, not only us-east's: sa-east's own shows the same disagreement.
	for _, asked := range []string{"us-east", "sa-east"} {
		sc := status.Client{Base: "http://" + n.HTTPAddr(asked)}
		eventually(t, 40*time.Second, asked+"'s network view shows sa-east disagreeing", func() (bool, string) {
			v, err := sc.Network(t.Context(), "disagree", "", "", 0)
			if err != nil {
				return false, err.Error()
			}
			for _, r := range v.Rows {
				if r.ID != "web-us-east" {
					continue
				}
				if r.Cells["sa-east-location"].State != "unhealthy" || r.Cells["us-east-location"].State != "healthy" {
					return false, fmt.Sprintf("cells %+v", r.Cells)
				}
				if want := "sa-east-location hears only sa-east checkers"; !strings.Contains(r.Reason, want) {
					return false, fmt.Sprintf("reason %q lacks %q", r.Reason, want)
				}
				var b strings.Builder
				_ = status.WriteNetwork(&b, v, time.Now())
				t.Logf("vigil status --addr %s network disagree:\n%s", n.HTTPAddr(asked), b.String())
				return true, ""
			}
			return false, fmt.Sprintf("web-us-east not among %d disagreements", len(v.Rows))
		})
	}
	// Availability counts whole seconds: hold the cut until sa-east has counted at least
	// one unhealthy second of web-us-east, or the heal may come within the same second.
	sa := status.Client{Base: "http://" + n.HTTPAddr("sa-east")}
	eventually(t, 30*time.Second, "sa-east counts an unhealthy second of web-us-east", func() (bool, string) {
		h, err := sa.History(t.Context(), "web-us-east")
		if err != nil {
			return false, err.Error()
		}
		a := h.Availability[0]
		return a.Observed > a.Healthy, fmt.Sprintf("%+v", a)
	})
	healAt := time.Now()
	if _, err := c.Heal(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "locations agree after the heal", func() (bool, string) {
		v, err := us.Network(t.Context(), "", "", "", 0)
		if err != nil {
			return false, err.Error()
		}
		if v.Disagreements != 0 {
			return false, fmt.Sprintf("%d disagreements", v.Disagreements)
		}
		return true, ""
	})
	done := time.Now()
	h, err := sa.History(t.Context(), "web-us-east")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = status.WriteHistory(&b, h, time.Now())
	t.Logf("vigil status --addr %s history web-us-east:\n%s", n.HTTPAddr("sa-east"), b.String())
	// Newest first: back to healthy after the heal, unhealthy after the cut.
	if len(h.Changes) < 3 {
		t.Fatalf("sa-east's history of web-us-east: %+v", h.Changes)
	}
	back, down := h.Changes[0], h.Changes[1]
	if down.From != history.StateHealthy || down.To != history.StateUnhealthy || down.At.Before(cutAt) || down.At.After(healAt) {
		t.Errorf("the cut's change: %+v (cut at %v, healed at %v)", down, cutAt, healAt)
	}
	if down.Stale == 0 || down.Fresh == 0 {
		t.Errorf("the cut's change does not count stale and fresh reports: %+v", down)
	}
	if back.From != history.StateUnhealthy || back.To != history.StateHealthy || back.At.Before(healAt) || back.At.After(done) {
		t.Errorf("the heal's change: %+v (healed at %v, agreed at %v)", back, healAt, done)
	}
	if a := h.Availability[0]; a.Window != "1h" || a.Observed <= 0 || a.Ratio <= 0 || a.Ratio >= 1 {
		t.Errorf("sa-east's availability of web-us-east over the hour: %+v, want between 0 and 1", a)
	}
	// The answers changed with the verdicts: sa-east answered all without us-east, then with.
	ah, err := sa.AnswerHistory(t.Context(), "all.demo.vigil.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(ah.Changes) < 2 {
		t.Errorf("sa-east's answer history of all.demo.vigil.test: %+v", ah.Changes)
	}
}
