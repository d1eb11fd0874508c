package verdict

import (
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/quorum"
)

// Reads. A verdict read is computed again, with quorum's rule, from what the engine holds at
// the time of its last Advance, with the held verdict as the previous one: nothing the
// verdict depends on changed since it was decided (or the engine would have re-decided it),
// so the state, rule and times are the ones the engine holds and hands to DNS, with fresh
// counts and evidence.

// Now returns the time of the last Advance (zero before the first).
func (e *Engine) Now() time.Time { return e.clock.time(e.now) }

// Len returns how many checks the configuration holds and how many of them have a verdict.
func (e *Engine) Len() (configured, decided int) {
	return e.configured, e.counts[0] + e.counts[1] + e.counts[2]
}

// Counts returns how many checks have a verdict in each state, by quorum.State. It is kept as
// verdicts change: it costs nothing.
func (e *Engine) Counts() [3]int { return e.counts }

// Verdict returns check id's verdict, with expected (the checkers the assignment expects to
// report it) counted into Counts.NeverHeard. ok is false for a check the configuration does
// not hold or that has no verdict yet.
func (e *Engine) Verdict(id string, expected []string) (v quorum.Verdict, ok bool) {
	i, _, ok := e.decided(id)
	if !ok {
		return quorum.Verdict{}, false
	}
	return e.evaluate(i, expected, e.now), true
}

// Each calls fn with every check that has a verdict, in no order; expected, when not nil,
// gives each check's expected checkers (see Verdict). fn must not call the engine.
func (e *Engine) Each(expected func(id string) []string, fn func(id string, v quorum.Verdict)) {
	for i := range e.checks {
		c := &e.checks[i]
		if c.flags&flagConfigured == 0 || c.flags&flagEvaluated == 0 {
			continue
		}
		var exp []string
		if expected != nil {
			exp = expected(c.id)
		}
		fn(c.id, e.evaluate(int32(i), exp, e.now))
	}
}

// Explain returns check id's verdict with its evidence: each report's vote and the expected
// checkers never heard from. held, when not nil, are the check's reports as the gossip table
// holds them now (gossip.Pool.ReportsFor, sorted by checker): each vote takes its checker's
// reason, latency and sequence from there. ok is false as for Verdict.
func (e *Engine) Explain(id string, expected []string, held []quorum.Report) (quorum.Explanation, bool) {
	i, c, ok := e.decided(id)
	if !ok {
		return quorum.Explanation{}, false
	}
	at := e.clock.time(e.now)
	if c.isCalc() {
		cc := e.calcs[i]
		children := e.children(cc)
		return quorum.ExplainCombined(cc.minHealthy, cc.ids, children, cc.inverted, cc.disabled, e.prev(c), at), true
	}
	rs := e.reports(&e.checks[i])
	for j := range rs {
		if h, ok := slices.BinarySearchFunc(held, rs[j].Checker, byChecker); ok {
			rs[j].Reason, rs[j].Latency, rs[j].Sequence = held[h].Reason, held[h].Latency, held[h].Sequence
		}
	}
	return quorum.Explain(e.policies.get(c.policy), rs, expected, e.prev(c), at), true
}

func byChecker(r quorum.Report, checker string) int { return strings.Compare(r.Checker, checker) }

// decided returns check id's index and state when it is configured and has a verdict.
func (e *Engine) decided(id string) (int32, *check, bool) {
	i, ok := e.ids.Get(id)
	if !ok {
		return -1, nil, false
	}
	c := &e.checks[i]
	if c.flags&flagConfigured == 0 || c.flags&flagEvaluated == 0 {
		return -1, nil, false
	}
	return i, c, true
}

// Checkers calls fn with every checker the engine knows, in no order: fresh as of the last
// Advance, and with the reports the engine holds of it.
func (e *Engine) Checkers(fn func(quorum.HeardChecker)) {
	for k := range e.checkers {
		ck := &e.checkers[k]
		if ck.id == "" {
			continue
		}
		c := quorum.HeardChecker{ID: ck.id, Region: ck.region, LastProgress: e.clock.time(ck.progress), Fresh: ck.fresh,
			Reports: int(ck.reports)}
		if !c.Fresh {
			c.StaleSince = quorum.StaleSince(c.LastProgress, e.window)
		}
		fn(c)
	}
}

// CheckStats is a check's verdict in numbers, for metrics.
type CheckStats struct {
	State quorum.State
	// Changes counts the verdict's changes to each state, by quorum.State, since the check
	// joined the configuration.
	Changes [3]uint32
}

// ReportStats is one report in numbers, for metrics.
type ReportStats struct {
	// Region is the checker's region (empty: unknown).
	Region string
	// Fresh says the checker was fresh at the last Advance.
	Fresh bool
	// Status is the report's status, as gossip carried it (unknown: not decided yet).
	Status  checker.Status
	Latency time.Duration
}

// EachStats calls fn with the checks that have a verdict among the next limit places of the
// engine's check table from place from, with each check's numbers and reports (valid during
// the call), and returns the place to go on from (0 at the end). Callers that walk every
// check a few thousand places at a time can let go of their lock between calls; checks
// added or removed meanwhile may be missed or seen twice.
func (e *Engine) EachStats(from, limit int, fn func(id string, s CheckStats, reports []ReportStats)) (next int) {
	end := min(from+limit, len(e.checks))
	var rs []ReportStats
	for i := from; i < end; i++ {
		c := &e.checks[i]
		if c.flags&flagConfigured == 0 || c.flags&flagEvaluated == 0 {
			continue
		}
		rs = rs[:0]
		for _, v := range c.votes {
			ck := &e.checkers[v.checker()]
			rs = append(rs, ReportStats{Region: ck.region, Fresh: ck.fresh, Status: v.status(),
				Latency: time.Duration(v.latency) * time.Microsecond})
		}
		fn(c.id, CheckStats{State: c.state, Changes: c.changes}, rs)
	}
	if end >= len(e.checks) {
		return 0
	}
	return end
}
