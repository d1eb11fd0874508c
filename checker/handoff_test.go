package checker

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// TestNextHandoffs: a checker that leaves a check's shard keeps it until the new holders
// have reported it for the overlap, at most its limit; a check dropped from the configuration
// goes at once.
func TestNextHandoffs(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	times := func(id string) (HandoffTimes, bool) {
		if id == "gone" {
			return HandoffTimes{}, false
		}
		return HandoffTimes{Limit: 10 * time.Second, Overlap: time.Second}, true
	}
	coveredIf := func(ids ...string) func(string) bool {
		return func(id string) bool { return slices.Contains(ids, id) }
	}
	tests := []struct {
		name    string
		prev    map[string]Handoff
		given   []string
		mine    []string
		now     time.Time
		covered func(string) bool
		want    map[string]Handoff
	}{
		{name: "nothing left", given: []string{"a", "b"}, mine: []string{"a", "b"}, now: t0, covered: coveredIf(), want: nil},
		{name: "left, new holder silent: kept from now", given: []string{"a", "b"}, mine: []string{"a"}, now: t0,
			covered: coveredIf(), want: map[string]Handoff{"b": {Left: t0}}},
		{name: "left, holders report it already: kept for the overlap", given: []string{"a", "b"}, mine: []string{"a"}, now: t0,
			covered: coveredIf("b"), want: map[string]Handoff{"b": {Left: t0, Covered: t0}}},
		{name: "new holder reports during the handoff: kept for the overlap", prev: map[string]Handoff{"b": {Left: t0}},
			given: []string{"a", "b"}, mine: []string{"a"}, now: sec(1), covered: coveredIf("b"),
			want: map[string]Handoff{"b": {Left: t0, Covered: sec(1)}}},
		{name: "covered within the overlap: kept", prev: map[string]Handoff{"b": {Left: t0, Covered: sec(1)}},
			given: []string{"a", "b"}, mine: []string{"a"}, now: sec(1.5), covered: coveredIf("b"),
			want: map[string]Handoff{"b": {Left: t0, Covered: sec(1)}}},
		{name: "covered for the overlap: dropped", prev: map[string]Handoff{"b": {Left: t0, Covered: sec(1)}},
			given: []string{"a", "b"}, mine: []string{"a"}, now: sec(2), covered: coveredIf("b"), want: nil},
		{name: "no longer covered: the overlap starts again", prev: map[string]Handoff{"b": {Left: t0, Covered: sec(1)}},
			given: []string{"a", "b"}, mine: []string{"a"}, now: sec(2), covered: coveredIf(),
			want: map[string]Handoff{"b": {Left: t0}}},
		{name: "handoff in progress keeps its start", prev: map[string]Handoff{"b": {Left: t0}}, given: []string{"a", "b"},
			mine: []string{"a"}, now: sec(9), covered: coveredIf(), want: map[string]Handoff{"b": {Left: t0}}},
		{name: "handoff past its limit: dropped", prev: map[string]Handoff{"b": {Left: t0}}, given: []string{"a", "b"},
			mine: []string{"a"}, now: sec(10), covered: coveredIf(), want: nil},
		{name: "check back in the shard: no handoff", prev: map[string]Handoff{"b": {Left: t0}}, given: []string{"a", "b"},
			mine: []string{"a", "b"}, now: sec(1), covered: coveredIf(), want: nil},
		{name: "check gone from the configuration: dropped at once", given: []string{"a", "gone"}, mine: []string{"a"},
			now: t0, covered: coveredIf(), want: nil},
		{name: "left every check", given: []string{"a"}, mine: nil, now: t0, covered: coveredIf(),
			want: map[string]Handoff{"a": {Left: t0}}},
		{name: "left before it was ever reported: dropped at once", given: []string{"a", "unreported"}, mine: []string{"a"},
			now: t0, covered: coveredIf(), want: nil},
		{name: "never given: nothing to hand off", given: nil, mine: []string{"a"}, now: t0, covered: coveredIf(), want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reported := func(id string) bool { return id != "unreported" }
			got := NextHandoffs(tc.prev, tc.given, tc.mine, tc.now, times, tc.covered, reported)
			if !maps.Equal(got, tc.want) {
				t.Errorf("handoffs %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHandoffLimit: a handoff lasts at most three probe intervals, a timeout and two
// freshness windows.
func TestHandoffLimit(t *testing.T) {
	c := config.DefaultCheck()
	c.Interval, c.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
	if got, want := HandoffLimit(&c, 5*time.Second), 3*c.Interval.Std()+c.Timeout.Std()+10*time.Second; got != want || got <= c.Interval.Std() {
		t.Errorf("limit %v, want %v (more than an interval)", got, want)
	}
}

// BenchmarkNextHandoffs: a checker given every check of a large configuration, after a write
// added one check (so mine is given plus one, none handed off): the work of one
// reassignment's handoff decision, which must grow with the checks, not with their square.
func BenchmarkNextHandoffs(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	times := func(string) (HandoffTimes, bool) {
		return HandoffTimes{Limit: 10 * time.Second, Overlap: time.Second}, true
	}
	yes := func(string) bool { return true }
	for _, n := range []int{10_000, 30_000, 100_000} {
		given := make([]string, n)
		for i := range given {
			given[i] = fmt.Sprintf("c%d", i)
		}
		mine := append(slices.Clone(given), "fast")
		b.Run(fmt.Sprintf("checks=%d", n), func(b *testing.B) {
			for b.Loop() {
				if next := NextHandoffs(nil, given, mine, now, times, yes, yes); len(next) != 0 {
					b.Fatalf("%d handoffs, want none", len(next))
				}
			}
		})
	}
}
