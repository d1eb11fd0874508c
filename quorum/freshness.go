package quorum

import "time"

// Fresh reports whether a report whose checker this location last heard make progress at
// lastProgress (zero: never) counts at now under p: the freshness rule Evaluate applies, for
// callers that follow freshness over time (the verdict engine's timers).
func (p Policy) Fresh(lastProgress, now time.Time) bool {
	p = p.Normalize()
	return !stale(&p, &Report{LastProgress: lastProgress}, now)
}
