package status

import (
	"reflect"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/quorum"
)

func TestCellState(t *testing.T) {
	for _, tc := range []struct {
		c    RegionCell
		want string
	}{
		{RegionCell{Healthy: 2}, CellHealthy},
		{RegionCell{Healthy: 2, Unhealthy: 1, Stale: 5}, CellHealthy},
		{RegionCell{Healthy: 1, Unhealthy: 1}, CellUnhealthy},
		{RegionCell{Unhealthy: 1, Stale: 3}, CellUnhealthy},
		{RegionCell{Stale: 1, NeverHeard: 2}, CellStale},
		{RegionCell{NeverHeard: 1}, CellUnknown},
		{RegionCell{}, CellUnknown},
	} {
		if got := cellState(tc.c); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.c, got, tc.want)
		}
	}
}

func TestHeardFrom(t *testing.T) {
	w := 5 * time.Second
	rs := []quorum.Report{
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
