package routing

import (
	"cmp"
	"slices"
	"time"
)

// NewLocality returns where a location of region own stands among regions (the
// configuration's): own first, then the regions it measured (rtt, the round-trip times to
// them), nearest first, then the rest in the configuration's order.
func NewLocality(own string, regions []string, rtt map[string]time.Duration) Locality {
	loc := Locality{Region: own, RTT: rtt}
	for _, r := range regions {
		if r != own {
			loc.Order = append(loc.Order, r)
		}
	}
	slices.SortStableFunc(loc.Order, func(a, b string) int {
		da, oka := rtt[a]
		db, okb := rtt[b]
		switch {
		case oka && okb:
			return cmp.Compare(da, db)
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
	return loc
}
