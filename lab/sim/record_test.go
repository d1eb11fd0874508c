package sim

import (
	"testing"
	"time"

	"github.com/vigil-dns/vigil/quorum"
)

// TestSampler: the sampler records a change with the brackets of the samples around it, a
// lost verdict as served (fail open), and nothing while verdicts stay the same.
func TestSampler(t *testing.T) {
	states := []map[string]verdictView{
		{"a": {State: quorum.StateHealthy, Serving: true}},
		{"a": {State: quorum.StateHealthy, Serving: true}},
		{"a": {State: quorum.StateUnhealthy}},
		{}, // the location restarted: no verdict
		{"a": {State: quorum.StateUnknown, Serving: true}},
	}
	i := 0
	s := newSampler(func(string) map[string]verdictView { return states[i] }, []string{"L1"})
	s.arm()
	for i = range states {
		s.sample()
	}
	got := s.history()
	want := []struct {
		state   quorum.State
		serving bool
		reason  string
	}{{quorum.StateHealthy, true, ""}, {quorum.StateUnhealthy, false, ""}, {quorum.StateUnknown, true, noVerdict}, {quorum.StateUnknown, true, ""}}
	if len(got) != len(want) {
		t.Fatalf("%d changes, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		c := got[k]
		if c.State != w.state || c.Serving != w.serving || c.Reason != w.reason {
			t.Errorf("change %d: %v serving %v %q, want %v %v %q", k, c.State, c.Serving, c.Reason, w.state, w.serving, w.reason)
		}
		if c.After.After(c.At) {
			t.Errorf("change %d: after %v is later than at %v", k, c.After, c.At)
		}
		if k > 0 && (c.After.Before(got[k-1].After) || c.At.Before(got[k-1].At)) {
			t.Errorf("change %d: (%v, %v] goes back before change %d's (%v, %v]", k, c.After, c.At, k-1, got[k-1].After, got[k-1].At)
		}
	}
	if fin := s.states()["L1"]["a"]; fin != quorum.StateUnknown {
		t.Errorf("final state %v", fin)
	}
}

// TestFlipsAfterRestart: a location that restarts between two samples goes from healthy to an
// undecided unknown and back to healthy; that is a restart, not a flip. An unknown verdict
// that held an earlier one until its hold ran out, and an unhealthy one, are flips.
func TestFlipsAfterRestart(t *testing.T) {
	healthy := verdictView{State: quorum.StateHealthy, Serving: true}
	undecided := verdictView{State: quorum.StateUnknown, Serving: true, Undecided: true}
	heldOut := verdictView{State: quorum.StateUnknown, Serving: true}
	unhealthy := verdictView{State: quorum.StateUnhealthy}
	for _, tc := range []struct {
		name  string
		views []verdictView
		flips int
	}{
		{"restart between samples", []verdictView{healthy, undecided, healthy}, 0},
		{"restart, then unhealthy", []verdictView{healthy, undecided, unhealthy}, 1},
		{"hold ran out", []verdictView{healthy, heldOut, healthy}, 2},
		{"unhealthy", []verdictView{healthy, unhealthy, healthy}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			s := newSampler(func(string) map[string]verdictView {
				return map[string]verdictView{"a": tc.views[i]}
			}, []string{"L1"})
			s.sample() // before the network was ready: the first verdict is no change
			r := &runner{sampler: s, readyAt: time.Now(), kept: map[[2]string]bool{{"L1", "a"}: true}}
			for i = 1; i < len(tc.views); i++ {
				s.sample()
			}
			if got := r.flips(); len(got) != tc.flips {
				t.Errorf("%d flips, want %d: %v", len(got), tc.flips, got)
			}
		})
	}
}
