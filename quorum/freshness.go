package quorum

import (
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Fresh reports whether a report whose checker this location last heard make progress at
// lastProgress (zero: never) counts at now under p: the package's Fresh with p's normalized
// window, as Evaluate applies it.
func (p Policy) Fresh(lastProgress, now time.Time) bool {
	return Fresh(lastProgress, now, p.Normalize().FreshnessWindow)
}

// FreshnessWindow returns the freshness window that verdicts apply under the document's quorum
// settings q: q's window, or the default when q's is zero or less (see Policy.Normalize).
func FreshnessWindow(q config.QuorumSettings) time.Duration {
	return Policy{FreshnessWindow: q.FreshnessWindow.Std()}.Normalize().FreshnessWindow
}

// StaleSince returns when a report whose checker was last heard at lastProgress went (or
// goes) stale under window: the end of the window, after which Fresh says false. Zero for a
// checker never heard.
func StaleSince(lastProgress time.Time, window time.Duration) time.Time {
	if lastProgress.IsZero() {
		return time.Time{}
	}
	return lastProgress.Add(window)
}
