package notify

import (
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

func obs(loc string, states map[string]string) Observation {
	return Observation{Location: loc, States: states}
}

// TestDecide walks a global rule (2 of 3 locations, for 30s, repeat 1h) and a regional rule
// through a story: pending, firing, held while a location is not reached, repeat, resolve.
func TestDecide(t *testing.T) {
	n := &config.Notifications{Rules: []config.NotifyRule{
		{Name: "g", Scope: config.ScopeGlobal, MinLocations: 2, For: config.Duration(30 * time.Second), Repeat: config.Duration(time.Hour), Receivers: []string{"r"}},
		{Name: "reg", Scope: config.ScopeRegional, Checks: []string{"web"}, Receivers: []string{"r"}},
	}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	down := map[string]string{"web": "unhealthy"}
	up := map[string]string{"web": "healthy"}
	// One location down: the regional rule fires at once, the global one does not.
	d := Decide(n, nil, nil, []Observation{obs("a", down), obs("b", up), obs("c", up)}, t0)
	if len(d.Command.Fire) != 1 || d.Command.Fire[0].Rule != "reg" || d.Command.Fire[0].Location != "a" || len(d.Pending) != 0 {
		t.Fatalf("one down: %+v pending %v", d.Command, d.Pending)
	}
	firing := []*state.Alert{{Key: "reg/web@a", Rule: "reg", Check: "web", Location: "a", Since: t0, Receivers: []string{"r"}}}
	// Two down: the global condition holds, pending for 30s.
	two := []Observation{obs("a", down), obs("b", down), obs("c", up)}
	d = Decide(n, firing, nil, two, t0.Add(time.Second))
	if !d.Empty() && len(d.Command.Fire) != 1 || d.Pending["g/web"] != t0.Add(time.Second) {
		t.Fatalf("two down: %+v pending %v", d.Command, d.Pending)
	}
	if len(d.Command.Fire) != 1 || d.Command.Fire[0].Location != "b" {
		t.Fatalf("two down, regional b: %+v", d.Command.Fire)
	}
	firing = append(firing, &state.Alert{Key: "reg/web@b", Rule: "reg", Check: "web", Location: "b", Since: t0})
	d = Decide(n, firing, d.Pending, two, t0.Add(31*time.Second))
	if len(d.Command.Fire) != 1 || d.Command.Fire[0].Rule != "g" || d.Command.Fire[0].Summary == "" {
		t.Fatalf("after 30s: %+v", d.Command)
	}
	firing = append(firing, &state.Alert{Key: "g/web", Rule: "g", Check: "web", Since: t0.Add(31 * time.Second)})
	// b not reached, a healthy again, c down: the global alert holds (b might still say
	// down), the regional alert at b holds, a's resolves, c's fires.
	d = Decide(n, firing, nil, []Observation{obs("a", up), {Location: "b"}, obs("c", down)}, t0.Add(40*time.Second))
	if len(d.Command.Fire) != 1 || d.Command.Fire[0].Location != "c" || len(d.Command.Resolve) != 1 || d.Command.Resolve[0].Location != "a" {
		t.Fatalf("b not reached: %+v", d.Command)
	}
	firing = firing[1:]
	// An hour after firing: a repeat of the global alert.
	d = Decide(n, firing, nil, two, t0.Add(31*time.Second+time.Hour))
	if len(d.Command.Repeat) != 1 || d.Command.Repeat[0].Repeat != 1 {
		t.Fatalf("repeat: %+v", d.Command)
	}
	// All healthy: both resolve.
	d = Decide(n, firing, nil, []Observation{obs("a", up), obs("b", up), obs("c", up)}, t0.Add(2*time.Hour))
	if len(d.Command.Resolve) != 2 {
		t.Fatalf("all up: %+v", d.Command)
	}
	// Nothing reached: nothing changes, pending is kept.
	d = Decide(n, firing, map[string]time.Time{"x": t0}, []Observation{{Location: "a"}}, t0.Add(3*time.Hour))
	if !d.Empty() || d.Pending["x"] != t0 {
		t.Fatalf("nothing reached: %+v", d)
	}
	// A rule removed: its alert resolves silently.
	d = Decide(&config.Notifications{}, firing[:1], nil, two, t0)
	if len(d.Command.Resolve) != 1 || !d.Command.Resolve[0].Silent {
		t.Fatalf("rule removed: %+v", d.Command)
	}
}

func TestSignVerify(t *testing.T) {
	body := []byte(`{"key":"k"}`)
	sig := Sign([]byte("s"), body)
	if !Verify([]byte("s"), body, sig) || Verify([]byte("t"), body, sig) || Verify([]byte("s"), []byte(`{}`), sig) {
		t.Fatal("signature does not verify as it should")
	}
}

// TestOverriddenDoesNotAlert: a check forced by a maintenance override at a location counts
// neither way there.
func TestOverriddenDoesNotAlert(t *testing.T) {
	n := &config.Notifications{Rules: []config.NotifyRule{{Name: "g", Scope: config.ScopeGlobal, MinLocations: 1, Receivers: []string{"r"}}}}
	d := Decide(n, nil, nil, []Observation{obs("a", map[string]string{"web": Overridden}), obs("b", map[string]string{"web": "healthy"})}, time.Now())
	if !d.Empty() {
		t.Fatalf("an overridden check alerts: %+v", d.Command)
	}
}
