package node

import (
	"maps"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// TestNextHandoffs: a checker that leaves a check's shard keeps it until the new holders
// report it, at most its limit; a check dropped from the configuration goes at once.
func TestNextHandoffs(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	limit := func(id string) (time.Duration, bool) {
		if id == "gone" {
			return 0, false
		}
		return 3 * time.Second, true
	}
	coveredIf := func(ids ...string) func(string) bool {
		return func(id string) bool {
			for _, x := range ids {
				if x == id {
					return true
				}
			}
			return false
		}
	}
	tests := []struct {
		name    string
		prev    map[string]time.Time
		given   []string
		mine    []string
		now     time.Time
		covered func(string) bool
		want    map[string]time.Time
	}{
		{name: "nothing left", given: []string{"a", "b"}, mine: []string{"a", "b"}, now: t0, covered: coveredIf(), want: nil},
		{name: "left, new holder silent: kept from now", given: []string{"a", "b"}, mine: []string{"a"}, now: t0,
			covered: coveredIf(), want: map[string]time.Time{"b": t0}},
		{name: "left, new holder reports: dropped", given: []string{"a", "b"}, mine: []string{"a"}, now: t0,
			covered: coveredIf("b"), want: nil},
		{name: "handoff in progress keeps its start", prev: map[string]time.Time{"b": t0}, given: []string{"a", "b"},
			mine: []string{"a"}, now: t0.Add(2 * time.Second), covered: coveredIf(), want: map[string]time.Time{"b": t0}},
		{name: "handoff past its limit: dropped", prev: map[string]time.Time{"b": t0}, given: []string{"a", "b"},
			mine: []string{"a"}, now: t0.Add(3 * time.Second), covered: coveredIf(), want: nil},
		{name: "check back in the shard: no handoff", prev: map[string]time.Time{"b": t0}, given: []string{"a", "b"},
			mine: []string{"a", "b"}, now: t0.Add(time.Second), covered: coveredIf(), want: nil},
		{name: "check gone from the configuration: dropped at once", given: []string{"a", "gone"}, mine: []string{"a"},
			now: t0, covered: coveredIf(), want: nil},
		{name: "left every check", given: []string{"a"}, mine: nil, now: t0, covered: coveredIf(),
			want: map[string]time.Time{"a": t0}},
		{name: "never given: nothing to hand off", given: nil, mine: []string{"a"}, now: t0, covered: coveredIf(), want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := nextHandoffs(tc.prev, tc.given, tc.mine, tc.now, limit, tc.covered)
			if !maps.Equal(got, tc.want) {
				t.Errorf("handoffs %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHandoffLimit: a handoff lasts at most three probe intervals, a timeout and a freshness
// window.
func TestHandoffLimit(t *testing.T) {
	c := config.DefaultCheck()
	c.Interval, c.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
	if got, want := handoffLimit(&c, 5*time.Second), 3*c.Interval.Std()+c.Timeout.Std()+5*time.Second; got != want || got <= c.Interval.Std() {
		t.Errorf("limit %v, want %v (more than an interval)", got, want)
	}
}
