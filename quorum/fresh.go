//go:build !vigil_mutant_nofreshness

package quorum

import "time"

// Fresh is the freshness rule, the one every package applies: a report counts at now when
// this location heard its checker make progress at lastProgress (by this location's own clock;
// zero means never) no longer than window before now. The build tag vigil_mutant_nofreshness
// swaps in a planted bug (fresh_mutant.go) that the real-process tests must catch.
func Fresh(lastProgress, now time.Time, window time.Duration) bool {
	return !lastProgress.IsZero() && now.Sub(lastProgress) <= window
}
