package sim

// The fleet-growth figures: what each grow step saw of the rebalance, and each measure of
// the per-node resources.

import (
	"time"
)

// Rebalance is what a grow step saw.
type Rebalance struct {
	// Added are the checkers that joined.
	Added []string
	// Covered is from the start of the growth until every location counted a fresh report of
	// every checker the plan over the whole fleet assigns to every probed check.
	Covered time.Duration
	// Took is from the start of the growth until the assignment was rebalanced, and stayed
	// so for rebalanceStable: every checker reports exactly the checks that plan gives it,
	// and every location expects and counts exactly the planned checkers of every check.
	Took time.Duration
	// Want is the fresh reports a check's shards promise: checkers per region × regions.
	Want int
	// FreshBefore and FreshDuring are the fewest and the most fresh reports any location
	// counted for a probed check, at the start of the growth and during the rebalance.
	FreshBefore, FreshDuring [2]int
	// ShortLooks counts the looks during the rebalance that found a location counting fewer
	// fresh reports than Want; ShortStalled those of them that came within a freshness window
	// after the harness stalled (stallMonitor): a location that ran nothing for a while hears
	// nothing for a while, and a report goes stale whether or not its shard moved.
	ShortLooks, ShortStalled int
	// Moved counts the (check, region) shards whose checkers changed.
	Moved int
	// StalledCovering and Stalled are how long the harness stalled (stallMonitor) from the
	// start of the growth until Covered and until Took: time in which no node ran.
	StalledCovering, Stalled time.Duration
}

// Growth is what a run's grow and measure steps found.
type Growth struct {
	// Measures are the measure steps' findings, in order.
	Measures []Resources
	// Rebalances are the grow steps' findings, in order.
	Rebalances []Rebalance
}
