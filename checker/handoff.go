package checker

import (
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Make before break. When the assignment moves a check from this checker to another (a checker
// joined its region, say), the check's new holder reports it only after its first probe, up to
// an interval later; a checker that withdrew its own report at once would leave every location
// counting fewer reports than the shards promise meanwhile (as few as 2 of 6 when half as many
// checkers again join, which `vigil sim fleet-growth` plays). So a checker that leaves a shard
// keeps probing and reporting the check until every checker of its region that the plan now
// gives the check has reported it, fresh in this node's table, for the overlap (one probe
// interval or one freshness window, the longer), so that their reports have had that long to
// reach every location before this one's withdrawal follows; and at most HandoffLimit. Also
// when the new holders report the check already when this checker learns that it left: they may
// have started a moment before, and a withdrawal spreads as fast as their reports do (a
// location that hears the withdrawal first counts one report fewer, 5 of 6, until theirs
// arrive).
//
// The decision here is pure: time is an argument, and what it needs to know of the node
// (configuration, reports, shards) comes as functions; Assignment.Give calls it (assignment.go).

// handoffIntervals bounds a handoff in probe intervals: the new holder's first probe is due
// within one interval of its assignment, and its views of membership may lag this node's.
const handoffIntervals = 3

// HandoffLimit is how long a checker that left a check's shard keeps probing it, at most: three
// probe intervals and a timeout for the new holders' first probes, and two freshness windows
// (window) for their reports to spread (a location waits one, too, before it calls a silent
// checker stale). vigil sim fleet-growth, on a machine loaded 7 times over its cores, saw the
// new holders counted up to 10s after they joined.
func HandoffLimit(c *config.Check, window time.Duration) time.Duration {
	return handoffIntervals*c.Interval.Std() + c.Timeout.Std() + 2*window
}

// Handoff is a check a checker left and still probes.
type Handoff struct {
	// Left is when the plan took the check from the checker.
	Left time.Time
	// Covered is since when every new holder has reported it (zero: not all of them yet).
	Covered time.Time
}

// HandoffTimes are the bounds of one check's handoff.
type HandoffTimes struct {
	// Limit bounds the handoff from when the check was left.
	Limit time.Duration
	// Overlap is how long the new holders' reports and this checker's must overlap.
	Overlap time.Duration
}

// NextHandoffs decides which checks a checker keeps probing although the plan no longer gives
// them to it. given are the checks it probed until now, mine those the plan gives it now,
// prev the handoffs in progress. A check left that this checker reported (reported) is handed
// off, unless its holders report it already, until covered has said for its overlap that they
// do, or until its limit has passed since it was left;
// times says, too, whether the configuration still has the check probed (ok false: dropped at
// once). It returns the handoffs still in progress (nil: none).
func NextHandoffs(prev map[string]Handoff, given, mine []string, now time.Time,
	times func(id string) (HandoffTimes, bool), covered, reported func(id string) bool) map[string]Handoff {
	var next map[string]Handoff
	// A set, not slices.Contains: given and mine are every check a checker probes, and a
	// scan of mine per given check was quadratic (at 100,000 checks a reassignment took
	// minutes, during which the node took no configuration change).
	kept := make(map[string]struct{}, len(mine))
	for _, id := range mine {
		kept[id] = struct{}{}
	}
	for _, id := range given {
		if _, ok := kept[id]; ok {
			continue
		}
		t, ok := times(id)
		if !ok {
			continue
		}
		c := covered(id)
		h, ok := prev[id]
		if !ok {
			if !reported(id) {
				// This checker has no report of it to lose (a new checker letting go of the
				// checks it took while it knew only part of the pool, before it probed them).
				continue
			}
			h.Left = now
		}
		switch {
		case !c:
			h.Covered = time.Time{}
		case h.Covered.IsZero():
			h.Covered = now
		}
		if now.Sub(h.Left) >= t.Limit || !h.Covered.IsZero() && now.Sub(h.Covered) >= t.Overlap {
			continue
		}
		if next == nil {
			next = map[string]Handoff{}
		}
		next[id] = h
	}
	return next
}
