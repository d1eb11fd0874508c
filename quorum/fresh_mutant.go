//go:build vigil_mutant_nofreshness

package quorum

import "time"

// Fresh is the planted bug MUTANT-NOFRESHNESS: a report heard once is fresh forever, so a
// location keeps counting the last word of checkers it no longer hears. Only a binary built
// with -tags vigil_mutant_nofreshness has it; netlab's TestOracleCatchesPlantedBug shows the
// oracle fails such a binary's run with wrong answers where the normal binary passes.
func Fresh(lastProgress, _ time.Time, _ time.Duration) bool {
	return !lastProgress.IsZero()
}
