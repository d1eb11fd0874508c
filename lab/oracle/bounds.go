package oracle

import (
	"errors"
	"time"
)

// Bounds are what the oracle assumes of the deployment beyond the document: how fast its
// processes act. Every window the oracle computes adds them to what the document says.
type Bounds struct {
	// Tick is the locations' evaluation interval: a location decides at most this long after
	// its reports change. (vigil agent: -eval, default 500ms.)
	Tick time.Duration
	// Spread bounds how long a report's change takes to reach every location that hears its
	// checker, relays included (gossip broadcasts, each node relaying once).
	Spread time.Duration
	// GossipRepair bounds how long after a link heals, or a process starts, the reports of
	// the checkers behind it reach a location again: the gossip pool's rejoin interval plus
	// a heartbeat, with room. (vigil agent: 15s rejoin, 2s heartbeat.)
	GossipRepair time.Duration
	// Membership bounds how long the checkers of a region take to notice that one of them
	// stopped or started and to move its checks (failure detection and handoff).
	Membership time.Duration
	// LocationStart bounds how long a started location takes to answer DNS.
	LocationStart time.Duration
	// Slack is added to every window, and allowed between an event's recorded instant and
	// when it took effect (both ways).
	Slack time.Duration
	// MaxLoss is the loss, in percent, up to which a link surely carries gossip (reports are
	// sent many times within a freshness window); above it gossip over the link is unsure.
	MaxLoss float64
	// Unanswered is the fraction of the judged queries of each location that may go
	// unanswered while the location is up (timeouts, errors, SERVFAIL, REFUSED).
	Unanswered float64
}

// DefaultBounds returns the bounds of vigil agent's defaults: evaluation every 500ms, gossip
// rejoined every 15s with a heartbeat every 2s, memberlist's LAN failure detection.
func DefaultBounds() Bounds {
	return Bounds{
		Tick:          500 * time.Millisecond,
		Spread:        time.Second,
		GossipRepair:  20 * time.Second,
		Membership:    15 * time.Second,
		LocationStart: 5 * time.Second,
		Slack:         time.Second,
		MaxLoss:       10,
		Unanswered:    0.001,
	}
}

// validate reports bounds that cannot be used.
func (b Bounds) validate() error {
	switch {
	case b.Tick < 0 || b.Spread < 0 || b.GossipRepair < 0 || b.Membership < 0 || b.LocationStart < 0 || b.Slack < 0:
		return errors.New("oracle: negative bound")
	case b.MaxLoss < 0 || b.MaxLoss > 100:
		return errors.New("oracle: MaxLoss is a percentage, 0 to 100")
	case b.Unanswered < 0 || b.Unanswered > 1:
		return errors.New("oracle: Unanswered is a fraction, 0 to 1")
	}
	return nil
}
