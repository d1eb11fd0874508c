package quorum

import (
	"cmp"
	"slices"
	"time"
)

// HeardChecker is a checker as one location hears it: the freshness rule applied to the
// checker as a whole rather than to one report. A location's verdict engine keeps it for
// every checker it knows, and the status API writes it as it is.
type HeardChecker struct {
	// ID and Region identify the checker.
	ID     string `json:"id"`
	Region string `json:"region"`
	// Fresh says this location heard the checker make progress within the freshness window.
	Fresh bool `json:"fresh"`
	// LastProgress is when this location last heard the checker make progress (zero: never).
	LastProgress time.Time `json:"last_progress,omitzero"`
	// StaleSince is when the checker went stale at this location: its last progress plus the
	// freshness window (StaleSince). Zero while fresh or never heard.
	StaleSince time.Time `json:"stale_since,omitzero"`
	// Reports is how many reports of this checker the location holds (a withdrawn report is
	// no longer held).
	Reports int `json:"reports"`
}

// HeardFrom returns the checkers as a location holding reports (of every check) hears them
// under window at now: one entry per checker, fresh when its latest progress is within the
// window, sorted by SortHeard. It is what a verdict engine keeps, computed from the reports.
func HeardFrom(reports []Report, window time.Duration, now time.Time) []HeardChecker {
	byID := map[string]*HeardChecker{}
	for i := range reports {
		r := &reports[i]
		h := byID[r.Checker]
		if h == nil {
			h = &HeardChecker{ID: r.Checker, Region: r.Region}
			byID[r.Checker] = h
		}
		h.Reports++
		if r.LastProgress.After(h.LastProgress) {
			h.LastProgress = r.LastProgress
		}
	}
	out := make([]HeardChecker, 0, len(byID))
	for _, h := range byID {
		if h.Fresh = Fresh(h.LastProgress, now, window); !h.Fresh {
			h.StaleSince = StaleSince(h.LastProgress, window)
		}
		out = append(out, *h)
	}
	SortHeard(out)
	return out
}

// SortHeard sorts checkers by region, then id: the order the status API lists them in.
func SortHeard(hs []HeardChecker) {
	slices.SortFunc(hs, func(a, b HeardChecker) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.ID, b.ID))
	})
}
