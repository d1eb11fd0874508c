package quorum

import (
	"fmt"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Explanation is a verdict with its evidence, in the shape the status API prints as JSON:
// states, rules and votes as strings, durations as "15s".
type Explanation struct {
	// State is the decision: "healthy", "unhealthy" or "unknown".
	State State `json:"state"`
	// ServedAsHealthy says whether DNS answers with the check's records (healthy or unknown).
	ServedAsHealthy bool `json:"served_as_healthy"`
	// Held says the state is an earlier one kept because too few reports are fresh.
	Held bool `json:"held"`
	// Rule names the rule applied; Sentence says it in words.
	Rule Rule `json:"rule"`
	// Sentence explains the verdict in one sentence.
	Sentence string `json:"explanation"`
	// At is when the verdict was computed.
	At time.Time `json:"evaluated_at"`
	// Since is when the state last changed.
	Since time.Time `json:"since"`
	// HeldSince is when the fresh reports ran short, the start of the hold: present while
	// there are too few fresh reports, held or (once the hold is over) unknown.
	HeldSince time.Time `json:"held_since,omitzero"`
	// Counts are what the verdict counted.
	Counts Counts `json:"counts"`
	// HealthyThreshold is the fraction of healthy fresh reports that had to be exceeded.
	HealthyThreshold float64 `json:"healthy_threshold"`
	// MinReporters is how many fresh reports a verdict needs (probed checks).
	MinReporters int `json:"min_reporters,omitempty"`
	// MinHealthy is how many children must serve healthy (calculated checks).
	MinHealthy int `json:"min_healthy,omitempty"`
	// FreshnessWindow is how long a report counts after its checker was last heard.
	FreshnessWindow config.Duration `json:"freshness_window,omitzero"`
	// Hold is how long an earlier state is held when reports run short.
	Hold config.Duration `json:"hold"`
	// Inverted says the check is inverted.
	Inverted bool `json:"inverted"`
	// Disabled says the check is disabled.
	Disabled bool `json:"disabled"`
	// Votes are the reports, in the order given: each one's vote or why it did not count.
	Votes []Vote `json:"votes,omitempty"`
	// NeverHeard are the checkers the assignment expects that this location holds no report
	// from, in the order expected.
	NeverHeard []string `json:"never_heard,omitempty"`
	// Children are a calculated check's children and how each counted.
	Children []ChildVote `json:"children,omitempty"`
}

// Vote is one report's part in a verdict.
type Vote struct {
	// Checker and Region identify the checker.
	Checker string `json:"checker"`
	Region  string `json:"region"`
	// Status is "healthy" or "unhealthy" (counted), or "stale" (not counted).
	Status VoteStatus `json:"status"`
	// Counted says whether the report counted toward the verdict.
	Counted bool `json:"counted"`
	// Expected says whether the assignment, as this location computes it, expects the checker
	// to report. Unexpected fresh reports count all the same.
	Expected bool `json:"expected"`
	// Why says in words why the report counted or did not.
	Why string `json:"why"`
	// Reason is the checker's own reason for its status.
	Reason string `json:"reason,omitempty"`
	// Latency is the checker's last probe duration.
	Latency config.Duration `json:"latency"`
	// Sequence is the report's sequence number.
	Sequence uint64 `json:"sequence"`
	// LastProgress is when this location last heard the checker make progress.
	LastProgress time.Time `json:"last_progress,omitzero"`
	// StaleSince is when the report went stale, for stale reports heard at least once.
	StaleSince time.Time `json:"stale_since,omitzero"`
}

// UnmarshalText reads a vote's name ("healthy", "unhealthy" or "stale"), so that a Vote read
// back from JSON (the status API's client) is the Vote written.
func (v *VoteStatus) UnmarshalText(b []byte) error {
	for i, name := range voteNames {
		if string(b) == name {
			*v = VoteStatus(i)
			return nil
		}
	}
	return fmt.Errorf("quorum: invalid vote %q (want healthy, unhealthy or stale)", b)
}

// ChildVote is one child's part in a calculated check's verdict.
type ChildVote struct {
	// Check is the child check's id.
	Check string `json:"check"`
	// State is the child's verdict.
	State State `json:"state"`
	// CountedHealthy says whether the child counted as healthy (healthy or unknown).
	CountedHealthy bool `json:"counted_healthy"`
}

// Summary returns the verdict's explanation without per-report evidence: what a status page
// listing every check shows.
func (v Verdict) Summary() Explanation {
	e := Explanation{
		State:            v.State,
		ServedAsHealthy:  v.Serving(),
		Held:             v.Held(),
		Rule:             v.Rule,
		Sentence:         v.Sentence(),
		At:               v.At,
		Since:            v.Since,
		HeldSince:        v.HeldSince,
		Counts:           v.Counts,
		HealthyThreshold: v.Threshold,
		Hold:             config.Duration(v.Hold),
		Inverted:         v.Inverted,
		Disabled:         v.Rule == RuleDisabled,
	}
	if v.Rule == RuleCombined {
		e.MinHealthy = v.Required
		e.Hold = 0
	} else {
		e.MinReporters = v.Required
	}
	return e
}

// Explain returns the verdict Evaluate returns for the same arguments, with its evidence: every
// report's vote or why it did not count, and the expected checkers never heard from.
func Explain(p Policy, reports []Report, expected []string, prev Verdict, now time.Time) Explanation {
	p = p.Normalize()
	v := Evaluate(p, reports, expected, prev, now)
	e := v.Summary()
	e.FreshnessWindow = config.Duration(p.FreshnessWindow)
	e.Inverted, e.Disabled = p.Inverted, p.Disabled
	e.Votes = make([]Vote, len(reports))
	window := p.FreshnessWindow.String()
	for i := range reports {
		r := &reports[i]
		status := classify(&p, r, now)
		vote := Vote{
			Checker:      r.Checker,
			Region:       r.Region,
			Status:       status,
			Counted:      status.Counted(),
			Expected:     slices.Contains(expected, r.Checker),
			Reason:       r.Reason,
			Latency:      config.Duration(r.Latency),
			Sequence:     r.Sequence,
			LastProgress: r.LastProgress,
		}
		switch status {
		case VoteHealthy, VoteUnhealthy:
			vote.Why = "counted " + status.String() + ": heard " + now.Sub(r.LastProgress).String() +
				" ago, within the " + window + " freshness window"
		case VoteStale:
			if r.LastProgress.IsZero() {
				vote.Why = "not counted: never heard making progress"
			} else {
				vote.StaleSince = StaleSince(r.LastProgress, p.FreshnessWindow)
				vote.Why = "not counted: stale, last heard " + now.Sub(r.LastProgress).String() +
					" ago, longer than the " + window + " freshness window"
			}
		}
		e.Votes[i] = vote
	}
	for _, id := range expected {
		if !hasReport(reports, id) {
			e.NeverHeard = append(e.NeverHeard, id)
		}
	}
	return e
}
