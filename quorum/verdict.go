package quorum

import (
	"fmt"
	"strconv"
	"time"
)

// Verdict is a location's decision for one check. It is compact (no pointers to evidence) so
// that a location can hold and recompute one per check cheaply; it still carries everything its
// one-sentence explanation needs. Pass it back as prev to the next Evaluate of the same check.
type Verdict struct {
	// State is the decision, after inversion.
	State State
	// Rule is the rule that produced State.
	Rule Rule
	// Inverted says the check is inverted: State is the opposite of what the reports said.
	Inverted bool
	// At is when the verdict was computed.
	At time.Time
	// Since is when State last changed.
	Since time.Time
	// HeldSince is when the fresh reports ran short (the first evaluation that found fewer than
	// Required); zero while there are enough.
	HeldSince time.Time
	// Counts are the reports (or, for a calculated check, the children) behind the verdict.
	Counts Counts
	// Threshold is the healthy fraction that had to be exceeded (zero for calculated checks).
	Threshold float64
	// Required is the policy's min reporters, or a calculated check's min healthy children.
	Required int
	// Hold is the policy's hold time.
	Hold time.Duration
}

// Counts are what a verdict counted. For a probed check: Fresh = Healthy + Unhealthy, and
// Fresh + Stale is the number of reports. For a calculated check: Healthy +
// Unhealthy is the number of children, and Unknown of the Healthy ones were unknown.
type Counts struct {
	// Healthy is the number of fresh reports (or children) that count as healthy.
	Healthy int `json:"healthy"`
	// Unhealthy is the number of fresh reports (or children) that count as unhealthy.
	Unhealthy int `json:"unhealthy"`
	// Fresh is the number of reports that counted.
	Fresh int `json:"fresh"`
	// Stale is the number of reports not heard from within the freshness window.
	Stale int `json:"stale"`
	// NeverHeard is the number of expected checkers with no report at all.
	NeverHeard int `json:"never_heard"`
	// Unknown is the number of a calculated check's children that were unknown (and counted as
	// healthy).
	Unknown int `json:"unknown,omitempty"`
}

// Serving reports whether DNS should treat the check as healthy: it is healthy or unknown
// (fail open). Only an unhealthy verdict takes a record out of answers.
func (v Verdict) Serving() bool { return v.State != StateUnhealthy }

// Held reports whether the verdict keeps an earlier state because too few reports are fresh.
func (v Verdict) Held() bool { return v.Rule == RuleHeld }

// Rule names the rule that produced a verdict.
type Rule uint8

// The rules of a verdict.
const (
	// RuleNone: no verdict has been computed (the zero Verdict).
	RuleNone Rule = iota
	// RuleThreshold: enough fresh reports; the healthy fraction decided.
	RuleThreshold
	// RuleHeld: too few fresh reports; the previous state is held within the hold time.
	RuleHeld
	// RuleShort: too few fresh reports, and the hold is over or there was nothing to hold.
	RuleShort
	// RuleDisabled: the check is disabled, so it is healthy.
	RuleDisabled
	// RuleCombined: a calculated check counted its children.
	RuleCombined
)

var ruleNames = [...]string{
	RuleNone:      "none",
	RuleThreshold: "threshold",
	RuleHeld:      "held",
	RuleShort:     "short",
	RuleDisabled:  "disabled",
	RuleCombined:  "combined",
}

// String returns the rule's name, e.g. "threshold".
func (r Rule) String() string {
	if int(r) < len(ruleNames) {
		return ruleNames[r]
	}
	return "Rule(" + strconv.Itoa(int(r)) + ")"
}

// MarshalText writes the rule's name, so JSON shows it as a string.
func (r Rule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a rule's name, so that a rule read back from JSON is the rule written.
func (r *Rule) UnmarshalText(b []byte) error {
	for i, name := range ruleNames {
		if string(b) == name {
			*r = Rule(i)
			return nil
		}
	}
	return fmt.Errorf("quorum: invalid rule %q", b)
}

// Sentence explains the verdict in one human sentence, e.g. "2 of 9 fresh reports are healthy
// (22.22%), more than the 18% threshold: healthy".
func (v Verdict) Sentence() string {
	c := v.Counts
	switch v.Rule {
	case RuleNone:
		return "no verdict yet: unknown, served as healthy (fail open)"
	case RuleDisabled:
		return "the check is disabled: always healthy"
	case RuleThreshold:
		raw := v.State
		if v.Inverted {
			raw = raw.invert()
		}
		frac := float64(c.Healthy) / float64(c.Fresh)
		cmp := "more than"
		if raw != StateHealthy {
			cmp = "not more than"
		}
		verb := "are"
		if c.Fresh == 1 {
			verb = "is"
		}
		s := fmt.Sprintf("%d of %s %s healthy (%s), %s the %s threshold: %s",
			c.Healthy, plural(c.Fresh, "fresh report"), verb, percent(frac), cmp, percent(v.Threshold), raw)
		if v.Inverted {
			s += ", inverted to " + v.State.String()
		}
		return s
	case RuleHeld:
		return fmt.Sprintf("only %s, fewer than the %d required, for %s: holding the previous verdict, %s, for at most %s",
			plural(c.Fresh, "fresh report"), v.Required, v.At.Sub(v.HeldSince), v.State, v.Hold)
	case RuleShort:
		short := v.At.Sub(v.HeldSince)
		if short < v.Hold {
			return fmt.Sprintf("only %s, fewer than the %d required, and no earlier verdict to hold: unknown, served as healthy (fail open)",
				plural(c.Fresh, "fresh report"), v.Required)
		}
		return fmt.Sprintf("only %s, fewer than the %d required, for %s, no less than the %s hold: unknown, served as healthy (fail open)",
			plural(c.Fresh, "fresh report"), v.Required, short, v.Hold)
	case RuleCombined:
		raw := v.State
		if v.Inverted {
			raw = raw.invert()
		}
		s := fmt.Sprintf("%d of %s serving healthy", c.Healthy, plural(c.Healthy+c.Unhealthy, "child"))
		if c.Unknown > 0 {
			s += fmt.Sprintf(" (%d of them unknown, counted as healthy)", c.Unknown)
		}
		s += fmt.Sprintf(", at least %d required: %s", v.Required, raw)
		if v.Inverted {
			s += ", inverted to " + v.State.String()
		}
		return s
	}
	return "unexplained rule " + v.Rule.String()
}

// plural writes "1 fresh report" or "3 fresh reports" ("child" becomes "children").
func plural(n int, noun string) string {
	if n != 1 {
		if noun == "child" {
			noun = "children"
		} else {
			noun += "s"
		}
	}
	return strconv.Itoa(n) + " " + noun
}

// percent writes a fraction as a percentage with at most four significant digits.
func percent(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }
