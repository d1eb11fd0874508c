package checker

import "testing"

func TestRiseFall(t *testing.T) {
	const H, U = true, false
	tests := []struct {
		name       string
		fail, succ int
		results    []bool
		want       []Status // status after each result
	}{
		{"first success reports healthy at once", 3, 3, []bool{H}, []Status{StatusHealthy}},
		{"first failure reports unhealthy at once", 3, 3, []bool{U}, []Status{StatusUnhealthy}},
		{"falls after three failures", 3, 3, []bool{H, U, U, U},
			[]Status{StatusHealthy, StatusHealthy, StatusHealthy, StatusUnhealthy}},
		{"a success in between resets the fall", 3, 3, []bool{H, U, U, H, U, U, U},
			[]Status{StatusHealthy, StatusHealthy, StatusHealthy, StatusHealthy, StatusHealthy, StatusHealthy, StatusUnhealthy}},
		{"rises after two successes", 3, 2, []bool{U, H, H},
			[]Status{StatusUnhealthy, StatusUnhealthy, StatusHealthy}},
		{"a failure in between resets the rise", 1, 2, []bool{U, H, U, H, H},
			[]Status{StatusUnhealthy, StatusUnhealthy, StatusUnhealthy, StatusUnhealthy, StatusHealthy}},
		{"threshold one flips every time", 1, 1, []bool{H, U, H, U},
			[]Status{StatusHealthy, StatusUnhealthy, StatusHealthy, StatusUnhealthy}},
		{"threshold zero counts as one", 0, 0, []bool{H, U}, []Status{StatusHealthy, StatusUnhealthy}},
		{"ten failures for threshold ten", 10, 3, []bool{H, U, U, U, U, U, U, U, U, U, U},
			[]Status{StatusHealthy, StatusHealthy, StatusHealthy, StatusHealthy, StatusHealthy, StatusHealthy,
				StatusHealthy, StatusHealthy, StatusHealthy, StatusHealthy, StatusUnhealthy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s RiseFall
			prev := StatusUnknown
			for i, r := range tt.results {
				var changed bool
				s, changed = s.Next(r, tt.fail, tt.succ)
				if s.Status != tt.want[i] {
					t.Fatalf("after result %d (%v): status %v, want %v", i, r, s.Status, tt.want[i])
				}
				if changed != (s.Status != prev) {
					t.Fatalf("after result %d: changed=%v but status went %v -> %v", i, changed, prev, s.Status)
				}
				prev = s.Status
			}
		})
	}
}

func TestRiseFallConsecutive(t *testing.T) {
	var s RiseFall
	for range 4 {
		s, _ = s.Next(false, 3, 3)
	}
	if s.Consecutive != 4 || s.LastHealthy {
		t.Fatalf("after 4 failures: %+v", s)
	}
	s, _ = s.Next(true, 3, 3)
	if s.Consecutive != 1 || !s.LastHealthy {
		t.Fatalf("after a success: %+v", s)
	}
	s.Consecutive = ^uint32(0)
	s, _ = s.Next(true, 3, 3)
	if s.Consecutive != ^uint32(0) {
		t.Fatalf("consecutive overflowed to %d", s.Consecutive)
	}
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{StatusUnknown: "unknown", StatusHealthy: "healthy", StatusUnhealthy: "unhealthy"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", s, s.String(), want)
		}
	}
}
