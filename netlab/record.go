package netlab

import (
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Fault and repair kinds of a run's events, as applied.
const (
	EventCut        = "cut"         // A and B cut apart, both ways
	EventCutOneWay  = "cut-oneway"  // packets from A to B dropped
	EventHealAll    = "heal-all"    // every link fault removed (cuts, loss, latency)
	EventLoss       = "loss"        // Percent of the packets between A and B dropped, each way
	EventLatency    = "latency"     // the link A-B delays packets by Latency ± Jitter
	EventTargetDown = "target-down" // A's demo target fails its health check
	EventTargetUp   = "target-up"   // it passes again
	EventKill       = "kill"        // Node killed (SIGKILL)
	EventStart      = "start"       // Node started again from its data directory
	EventKillLeader = "kill-leader" // Node, the control plane's leader, killed
)

// FaultEvent is one fault or repair as the harness applied it.
type FaultEvent struct {
	// Begun is when the harness started applying it; At when it had taken effect (the
	// nftables transaction committed, the process reaped, the target answered).
	Begun, At time.Time
	// Kind is one of the Event constants.
	Kind string
	// A and B are the regions of a link fault (cut-oneway: from A to B); A alone is the
	// region of a target.
	A, B string
	// Node is the process a kill, start or kill-leader acted on.
	Node string
	// Percent is a loss's share of packets dropped (0 removes the loss).
	Percent float64
	// Latency and Jitter are a latency's delay (0 removes it).
	Latency, Jitter time.Duration
	// Step is the script line that asked for it.
	Step string
}

// Query is one DNS query a client in a location's region sent to that location.
type Query struct {
	// Location is the location node asked, e.g. "us-east-location"; Region its region.
	Location, Region string
	// Name is the query name, absolute; Type its type ("A").
	Name, Type string
	// Sent is just before the query left; Received just after the answer came, zero
	// without one.
	Sent, Received time.Time
	// Rcode is the response code, -1 without a response.
	Rcode int
	// Values are the answer section's record values, in order.
	Values []string
	// TimedOut says no answer came within the timeout; Err holds any other failure
	// (e.g. "connection refused" from a location that is not running).
	TimedOut bool
	Err      string
}

// Record is everything a run did and saw: what an independent judge needs.
type Record struct {
	// Document is the configuration applied through the control API.
	Document *config.Document
	// Regions are the network's regions, in order.
	Regions []string
	// Targets maps each probed check's ID to the region its target lives in.
	Targets map[string]string
	// Locations and Checkers map each location and checker node to its region; Voters
	// each control voter.
	Locations, Checkers, Voters map[string]string
	// Start is when the network was ready (every location answered every region); End
	// when the queries stopped.
	Start, End time.Time
	// Events are the faults and repairs, in the order applied.
	Events []FaultEvent
	// Queries are every query, by location, in the order sent.
	Queries []Query
	// QueryInterval is how often each location was asked; QueryTimeout how long an answer
	// was waited for.
	QueryInterval, QueryTimeout time.Duration
}
