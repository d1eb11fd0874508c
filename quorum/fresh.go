//go:build !vigil_mutant_nofreshness

package quorum

import "time"

// stale reports whether the location has not heard r's checker make progress within the
// freshness window (or never). The build tag vigil_mutant_nofreshness swaps in a planted bug
// (fresh_mutant.go) that the real-process tests must catch.
func stale(p *Policy, r *Report, now time.Time) bool {
	return r.LastProgress.IsZero() || now.Sub(r.LastProgress) > p.FreshnessWindow
}
