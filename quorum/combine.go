package quorum

import "time"

// Combine decides a calculated check at now from its children's verdicts: healthy when at least
// minHealthy children are serving healthy, otherwise unhealthy. minHealthy equal to the number
// of children is AND, 1 is OR, anything between is N of M; minHealthy of zero or less means all
// of them (the configuration's default), and more than there are children is never healthy.
//
// An unknown child counts as healthy, as DNS serves it (fail open): a child that nobody can
// judge does not take its parent down. The verdict counts the unknown children (Counts.Unknown,
// included in Counts.Healthy) and its sentence says so. A calculated verdict is therefore never
// unknown itself. Inverted swaps healthy and unhealthy; disabled is always healthy.
func Combine(minHealthy int, children []Verdict, inverted, disabled bool, prev Verdict, now time.Time) Verdict {
	if minHealthy <= 0 {
		minHealthy = len(children)
	}
	var c Counts
	for i := range children {
		switch children[i].State {
		case StateHealthy:
			c.Healthy++
		case StateUnknown:
			c.Healthy++
			c.Unknown++
		default:
			c.Unhealthy++
		}
	}
	v := Verdict{Rule: RuleCombined, Inverted: inverted, At: now, Counts: c, Required: minHealthy}
	switch {
	case disabled:
		v.State, v.Rule, v.Inverted = StateHealthy, RuleDisabled, false
	case c.Healthy >= minHealthy:
		v.State = StateHealthy
	default:
		v.State = StateUnhealthy
	}
	if inverted && !disabled {
		v.State = v.State.invert()
	}
	v.Since = prev.Since
	if v.Since.IsZero() || v.State != prev.State {
		v.Since = now
	}
	return v
}

// ExplainCombined returns the verdict Combine returns for the same arguments, with each child
// named: ids[i] is the check id of children[i] (missing ids are left empty).
func ExplainCombined(minHealthy int, ids []string, children []Verdict, inverted, disabled bool, prev Verdict, now time.Time) Explanation {
	v := Combine(minHealthy, children, inverted, disabled, prev, now)
	e := v.Summary()
	e.Inverted, e.Disabled = inverted, disabled
	e.MinHealthy, e.MinReporters, e.Hold = v.Required, 0, 0
	e.Children = make([]ChildVote, len(children))
	for i, child := range children {
		cv := ChildVote{State: child.State, CountedHealthy: child.Serving()}
		if i < len(ids) {
			cv.Check = ids[i]
		}
		e.Children[i] = cv
	}
	return e
}
