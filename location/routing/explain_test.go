package routing

import (
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestHealthStateText: every health state reads back from the name the status API writes,
// and a name of no state is refused.
func TestHealthStateText(t *testing.T) {
	for s := HealthNoCheck; s <= HealthIgnored; s++ {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back HealthState
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%s: read back %v, %v", b, back, err)
		}
	}
	var h HealthState
	if err := h.UnmarshalText([]byte("sick")); err == nil {
		t.Errorf("sick read as %v", h)
	}
}

// TestAnsweringFrom: what a set answers from, whatever the draw, and what it answers from
// when every record is healthy.
func TestAnsweringFrom(t *testing.T) {
	tests := []struct {
		name     string
		rs       *config.RecordSet
		health   Health
		want     []string
		failOpen []string
	}{
		{"failover, primary healthy", set(config.PolicyFailover,
			role("192.0.2.2", "p", config.RolePrimary), role("192.0.2.1", "s", config.RoleSecondary)),
			down(), []string{"192.0.2.2"}, []string{"192.0.2.2"}},
		{"failover, primary down", set(config.PolicyFailover,
			role("192.0.2.2", "p", config.RolePrimary), role("192.0.2.1", "s", config.RoleSecondary)),
			down("p"), []string{"192.0.2.1"}, []string{"192.0.2.2"}},
		{"failover, last resort", set(config.PolicyFailover,
			role("192.0.2.2", "p", config.RolePrimary), role("192.0.2.1", "s", config.RoleSecondary)),
			down("p", "s"), []string{"192.0.2.2"}, []string{"192.0.2.2"}},
		{"weighted, one down", set(config.PolicyWeighted,
			weighted("192.0.2.3", "a", 1), weighted("192.0.2.1", "b", 5), weighted("192.0.2.2", "", 0)),
			down("a"), []string{"192.0.2.1", "192.0.2.2"}, []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}},
		{"multivalue, last resort", set(config.PolicyMultivalue, rec("192.0.2.2", "a"), rec("192.0.2.1", "b")),
			down("a", "b"), []string{"192.0.2.1", "192.0.2.2"}, []string{"192.0.2.1", "192.0.2.2"}},
		{"simple", set(config.PolicySimple, rec("192.0.2.2", "a"), rec("192.0.2.1", "")),
			down("a"), []string{"192.0.2.1", "192.0.2.2"}, []string{"192.0.2.1", "192.0.2.2"}},
	}
	for _, tc := range tests {
		for rnd := range uint64(8) {
			r, err := Explain(tc.rs, tc.health, rnd)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := r.AnsweringFrom(); !slices.Equal(got, tc.want) {
				t.Errorf("%s, draw %d: answering from %v, want %v", tc.name, rnd, got, tc.want)
			}
			if got := r.FailOpen(); !slices.Equal(got, tc.failOpen) {
				t.Errorf("%s, draw %d: fail open %v, want %v", tc.name, rnd, got, tc.failOpen)
			}
		}
	}
}
