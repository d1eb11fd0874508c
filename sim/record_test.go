package sim

import (
	"testing"

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
