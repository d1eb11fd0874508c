package quorum

import (
	"reflect"
	"testing"
	"time"
)

// TestHeardFrom: one entry per checker, its latest progress and its reports counted, fresh
// under the package's rule, stale since the end of its window, sorted by region then id.
func TestHeardFrom(t *testing.T) {
	w := 5 * time.Second
	rs := []Report{
		{Checker: "b", Region: "r1", LastProgress: t0.Add(-time.Minute)},
		{Checker: "b", Region: "r1", LastProgress: t0.Add(-2 * time.Second)},
		{Checker: "a", Region: "r2", LastProgress: t0.Add(-6 * time.Second)},
		{Checker: "c", Region: "r1"},
		{Checker: "d", Region: "r1", LastProgress: t0.Add(-5 * time.Second)},
	}
	got := HeardFrom(rs, w, t0)
	want := []HeardChecker{
		{ID: "b", Region: "r1", Fresh: true, LastProgress: t0.Add(-2 * time.Second), Reports: 2},
		{ID: "c", Region: "r1", Reports: 1},
		{ID: "d", Region: "r1", Fresh: true, LastProgress: t0.Add(-5 * time.Second), Reports: 1},
		{ID: "a", Region: "r2", LastProgress: t0.Add(-6 * time.Second), StaleSince: t0.Add(-time.Second), Reports: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if got := HeardFrom(nil, w, t0); len(got) != 0 {
		t.Errorf("no reports: %+v", got)
	}
}
