package quorum

import "time"

// Evaluate decides one check at one location at now, from the reports the location holds for
// it, the checkers the assignment expects to report, and the previous verdict for the check
// (the zero Verdict when there is none). It allocates nothing. The rules are in the package
// documentation; Explain computes the same verdict with its evidence.
func Evaluate(p Policy, reports []Report, expected []string, prev Verdict, now time.Time) Verdict {
	p = p.Normalize()
	var c Counts
	for i := range reports {
		switch classify(&p, &reports[i], now) {
		case VoteHealthy:
			c.Healthy++
		case VoteUnhealthy:
			c.Unhealthy++
		case VoteStale:
			c.Stale++
		}
	}
	c.Fresh = c.Healthy + c.Unhealthy
	for _, id := range expected {
		if !hasReport(reports, id) {
			c.NeverHeard++
		}
	}
	return decide(&p, c, prev, now)
}

// hasReport reports whether reports hold one from checker id. A linear scan: a check has a
// handful of reports, and a map would allocate.
func hasReport(reports []Report, id string) bool {
	for i := range reports {
		if reports[i].Checker == id {
			return true
		}
	}
	return false
}

// decide turns the counts into a verdict under the normalized policy p.
func decide(p *Policy, c Counts, prev Verdict, now time.Time) Verdict {
	v := Verdict{
		Inverted:  p.Inverted,
		At:        now,
		Counts:    c,
		Threshold: p.HealthyThreshold,
		Required:  p.MinReporters,
		Hold:      p.Hold,
	}
	switch {
	case p.Disabled:
		v.State, v.Rule, v.Inverted = StateHealthy, RuleDisabled, false
	case c.Fresh >= p.MinReporters:
		v.Rule = RuleThreshold
		v.State = StateUnhealthy
		if float64(c.Healthy)/float64(c.Fresh) > p.HealthyThreshold {
			v.State = StateHealthy
		}
		if p.Inverted {
			v.State = v.State.invert()
		}
	default:
		// Short of reports: counted from the first evaluation that found them short. A start
		// in the future (the location's clock went back) restarts the count now, so a hold
		// can never last longer than Hold from the moment it is seen.
		v.HeldSince = prev.HeldSince
		if v.HeldSince.IsZero() || v.HeldSince.After(now) {
			v.HeldSince = now
		}
		if prev.State != StateUnknown && now.Sub(v.HeldSince) < p.Hold {
			v.State, v.Rule = prev.State, RuleHeld
		} else {
			v.State, v.Rule = StateUnknown, RuleShort
		}
	}
	v.Since = prev.Since
	if v.Since.IsZero() || v.State != prev.State {
		v.Since = now
	}
	return v
}
