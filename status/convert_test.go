package status

import "testing"

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
