package checker

import (
	"fmt"
	"testing"
	"time"
)

func TestFirstDue(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		now      time.Time
		interval time.Duration
		hash     uint64
		want     time.Time
	}{
		{base, 10 * time.Second, 3e9, base.Add(3 * time.Second)},
		{base.Add(4 * time.Second), 10 * time.Second, 3e9, base.Add(13 * time.Second)},
		{base.Add(3 * time.Second), 10 * time.Second, 3e9, base.Add(3 * time.Second)},
		{base, 10 * time.Second, 10e9 + 7, base.Add(7)},
		{base, 0, 5, base},
	}
	for _, tt := range tests {
		if got := firstDue(tt.now, tt.interval, tt.hash); !got.Equal(tt.want) {
			t.Errorf("firstDue(%v, %v, %d) = %v, want %v", tt.now, tt.interval, tt.hash, got, tt.want)
		}
	}
}

func TestNextDue(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	iv := 10 * time.Second
	tests := []struct {
		due, now, want time.Time
	}{
		{base, base, base.Add(iv)},
		{base, base.Add(9 * time.Second), base.Add(iv)},
		{base, base.Add(iv), base.Add(2 * iv)},               // exactly at the next slot: skip it
		{base, base.Add(35 * time.Second), base.Add(4 * iv)}, // 3 slots missed, not run in a burst
	}
	for _, tt := range tests {
		if got := nextDue(tt.due, tt.now, iv); !got.Equal(tt.want) {
			t.Errorf("nextDue(%v, %v) = %v, want %v", tt.due, tt.now, got, tt.want)
		}
	}
}

// TestSpreadHashSpreads checks that 10,000 checks land evenly over a 10 s interval, and that
// the same check lands elsewhere at another checker.
func TestSpreadHashSpreads(t *testing.T) {
	const n, buckets = 10000, 10
	iv := 10 * time.Second
	var count [buckets]int
	for i := range n {
		phase := time.Duration(spreadHash("checker-1", fmt.Sprintf("check-%d", i)) % uint64(iv))
		count[phase/time.Second]++
	}
	for b, c := range count {
		if c < n/buckets*8/10 || c > n/buckets*12/10 {
			t.Errorf("second %d of the interval has %d checks, want about %d", b, c, n/buckets)
		}
	}
	if spreadHash("checker-1", "x") == spreadHash("checker-2", "x") {
		t.Error("two checkers place a check at the same phase")
	}
	if spreadHash("checker-1", "x") != spreadHash("checker-1", "x") {
		t.Error("spread is not deterministic")
	}
}
