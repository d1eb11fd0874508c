package gossip

import (
	"time"

	"github.com/vigil-dns/vigil/quorum"
)

// A location counts a checker's reports while the checker's progress keeps arriving there,
// relayed or not, by the location's own clock (table.go's finish says what is progress). Two
// things decide whether a checker that is reachable, directly or through a third region,
// stays fresh: how many heartbeats it sends per freshness window, and how widely each is
// relayed.
const (
	// beatRelays is how many peers each node relays each heartbeat it learns to. When every
	// node relays a message to f peers, a share of about e^-f of the pool never hears it:
	// 2% at 4, and a checker goes stale only when every heartbeat of a freshness window
	// misses. Deltas must reach every node, so they scale with the pool (memberlist's
	// RetransmitMult times log10 of its size); heartbeats need not, and cost the same at any
	// size. At 1 relay (memberlist's scaling in pools under 10), with a 5s window and a
	// heartbeat every 1s, locations held reachable checkers stale 5-30% of the time, and half
	// the time across a cut link (TestRelayedCheckersStayFresh).
	beatRelays = 4
	// beatsPerWindow is how many heartbeats a checker sends per freshness window at least.
	// With 2 (a 5s window and the default 2s heartbeat), locations still held reachable
	// checkers stale for a second now and then during the us-sa cut (5 of 9 runs of
	// TestRelayedCheckersStayFresh at a 2s heartbeat); with 5, in none of 24.
	beatsPerWindow = 5
	// minHeartbeat bounds how often a checker heartbeats.
	minHeartbeat = 100 * time.Millisecond
)

// SetFreshnessWindow tells the node the freshness window of the configuration in force: a
// checker heartbeats at least beatsPerWindow times per window, and never less often than
// Config.HeartbeatInterval. A window of 0 keeps Config.HeartbeatInterval.
func (n *Pool) SetFreshnessWindow(window time.Duration) {
	d := n.cfg.HeartbeatInterval
	if window > 0 {
		d = max(min(d, window/beatsPerWindow), minHeartbeat)
	}
	n.window.Store(int64(window))
	if n.beatEvery.Swap(int64(d)) != int64(d) {
		select {
		case n.beatChanged <- struct{}{}:
		default:
		}
	}
}

// heartbeatInterval returns the heartbeat interval in force.
func (n *Pool) heartbeatInterval() time.Duration {
	if d := time.Duration(n.beatEvery.Load()); d > 0 {
		return d
	}
	return n.cfg.HeartbeatInterval
}

// Liveness for assignment. memberlist declares a peer dead when its probes, direct and through
// a few other members, went unanswered for its suspicion timeout, and it applies a dead
// message about a peer relayed from a third node even when it reaches that peer itself (the
// peer then refutes it). In a non-transitive partition (us-sa cut, eu hearing both) that
// happens to live checkers: at memberlist's local profile, sa's checkers declared each other
// dead 1 to 4 times in 3 minutes of the cut, and each such flip moved checks to other checkers
// of the region and back (a takeover, then a handoff and withdrawals). So a checker declared
// dead whose progress still arrives here within the freshness window stays live for
// assignment (Checkers) until its progress stops; only then do the membership's listeners
// hear that it left. A checker that left gracefully goes at once (TestDeadHintNoChurn).

// progressingLocked reports whether checker m made progress here within the freshness window
// (zero until SetFreshnessWindow: no window, no lingering). Called with n.mu held.
func (n *Pool) progressingLocked(m Member, now time.Time) bool {
	window := time.Duration(n.window.Load())
	if window <= 0 || !m.Roles.Has(RoleChecker) {
		return false
	}
	r := n.table.rows[m.ID]
	return r != nil && quorum.Fresh(r.progress, now, window)
}

// sweepLingering lets go of the checkers declared dead whose progress stopped, and tells the
// membership's listeners that they left.
func (n *Pool) sweepLingering() {
	now := n.cfg.Now()
	var gone []Member
	n.mu.Lock()
	for id, m := range n.lingering {
		if !n.progressingLocked(m, now) {
			delete(n.lingering, id)
			gone = append(gone, m)
		}
	}
	n.mu.Unlock()
	for _, m := range gone {
		n.log.Info("member left", "member", m.ID, "region", m.Region, "dead", true, "progress", "stopped")
		if n.cfg.OnMembership != nil {
			n.cfg.OnMembership(MemberEvent{Kind: MemberLeft, Member: m, Dead: true})
		}
	}
}
