package routing

import "testing"

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
