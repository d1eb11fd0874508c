package quorum

import (
	"math"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Policy is the rule a location applies to one check's reports.
type Policy struct {
	// HealthyThreshold is the fraction of fresh reports that must say healthy, strictly
	// exceeded, for a healthy verdict: 0.18 means more than 18%.
	HealthyThreshold float64
	// MinReporters is how many fresh reports a verdict needs; at least 1.
	MinReporters int
	// FreshnessWindow is how long a report counts after the location last heard its checker
	// make progress.
	FreshnessWindow time.Duration
	// Hold is how long the previous verdict is kept when too few reports are fresh, before the
	// verdict becomes unknown. Zero means no holding: short of reports is unknown at once.
	Hold time.Duration
	// Inverted swaps healthy and unhealthy.
	Inverted bool
	// Disabled makes every verdict healthy.
	Disabled bool
}

// PolicyFor returns the policy of check c under the document's quorum settings q. Values a
// verdict cannot use are replaced, as Evaluate would replace them (see Policy.Normalize).
func PolicyFor(c config.Check, q config.QuorumSettings) Policy {
	return Policy{
		HealthyThreshold: c.HealthyThreshold,
		MinReporters:     c.MinReporters,
		FreshnessWindow:  q.FreshnessWindow.Std(),
		Hold:             q.Hold.Std(),
		Inverted:         c.Inverted,
		Disabled:         c.Disabled,
	}.Normalize()
}

// Normalize returns p with every value a verdict cannot use replaced: a threshold that is not
// a number becomes the default (0.18) and one outside [0, 1] is clamped; fewer than 1 min
// reporters becomes 1 (a verdict needs a report); a freshness window of zero or less becomes
// the default (15s; a zero window would make every report stale); a negative hold becomes zero.
// Evaluate, Explain and Combine normalize the policy they are given, so a hand-built policy
// cannot make them divide by zero or hold forever.
func (p Policy) Normalize() Policy {
	switch {
	case math.IsNaN(p.HealthyThreshold):
		p.HealthyThreshold = config.DefaultHealthyThreshold
	case p.HealthyThreshold < 0:
		p.HealthyThreshold = 0
	case p.HealthyThreshold > 1:
		p.HealthyThreshold = 1
	}
	if p.MinReporters < 1 {
		p.MinReporters = 1
	}
	if p.FreshnessWindow <= 0 {
		p.FreshnessWindow = config.DefaultDocument().Quorum.FreshnessWindow.Std()
	}
	if p.Hold < 0 {
		p.Hold = 0
	}
	return p
}
