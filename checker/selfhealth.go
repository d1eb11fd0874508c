package checker

import (
	"fmt"
	"slices"
)

// IsolationPolicy says when a checker concludes that its own network is down rather than
// every target at once. Only failures that say nothing came back (timeouts, unreachable
// networks, failed name resolution) count: a refused connection, a TLS error or a 503 prove
// that the network works.
type IsolationPolicy struct {
	// MinFailures is how many such failures in a row, over all checks and canaries, make
	// the checker isolated. Default 8.
	MinFailures int
	// MinTargets is how many distinct targets (host and port; canaries included) that run
	// must span, so that one dead target, however many checks point at it, cannot isolate a
	// checker. Default 3.
	MinTargets int
}

// withDefaults fills unset fields.
func (p IsolationPolicy) withDefaults() IsolationPolicy {
	if p.MinFailures <= 0 {
		p.MinFailures = 8
	}
	if p.MinTargets <= 0 {
		p.MinTargets = 3
	}
	return p
}

// SelfHealth is a checker's view of itself: whether its reports stand.
type SelfHealth struct {
	// Healthy is false while the checker is isolated; it then withdraws every report.
	Healthy bool `json:"healthy"`
	// Reason explains an isolation, for the status API and logs.
	Reason string `json:"reason,omitempty"`
}

// reachability sorts a result for self-health: +1 proves the network works, -1 is a failure
// that could be the checker's own, 0 says nothing (e.g. an address refused by policy).
func reachability(healthy bool, reason Reason) int {
	if healthy {
		return 1
	}
	switch reason {
	case ReasonTimeout, ReasonUnreachable, ReasonDNS, ReasonError:
		return -1
	case ReasonAddressRefused:
		return 0
	}
	return 1
}

// selfTracker is the pure state machine of self-health. It sees every probe result, canary
// or not, in the order they finish.
type selfTracker struct {
	policy   IsolationPolicy
	run      int      // consecutive reachability failures
	hosts    []string // distinct targets (host:port) in the run, at most policy.MinTargets
	canaries int      // canaries configured
	down     []string // canaries whose latest result was a reachability failure
	isolated bool
	// successes counts results that proved the network works (never 0 after the first:
	// it starts at 1), so that a hold can tell whether one came since.
	successes uint64
}

func newSelfTracker(p IsolationPolicy, canaries int) selfTracker {
	return selfTracker{policy: p.withDefaults(), canaries: canaries, successes: 1}
}

// observe applies one result of check id (a canary or not) of target (host:port, needed
// only for failures), and reports whether isolation began or ended.
func (t *selfTracker) observe(id, host string, canary, healthy bool, reason Reason) bool {
	r := reachability(healthy, reason)
	if canary {
		i := slices.Index(t.down, id)
		switch {
		case r < 0 && i < 0:
			t.down = append(t.down, id)
		case r > 0 && i >= 0:
			t.down = slices.Delete(t.down, i, i+1)
		}
	}
	switch {
	case r > 0:
		t.run, t.hosts = 0, t.hosts[:0]
		t.successes++
	case r < 0:
		t.run++
		if len(t.hosts) < t.policy.MinTargets && !slices.Contains(t.hosts, host) {
			t.hosts = append(t.hosts, host)
		}
	}
	was := t.isolated
	t.isolated = t.run >= t.policy.MinFailures && len(t.hosts) >= t.policy.MinTargets &&
		len(t.down) == t.canaries
	return t.isolated != was
}

// suspect reports whether the latest probes look like the checker's own failure: at least
// the last two failed to reach two different targets, and no canary answers. A check does not
// turn unhealthy on such a failure: if the checker is isolated, its reports are about to be
// withdrawn; if not, a success elsewhere soon clears the suspicion and the check's next
// failure (its failure count keeps running) turns it.
func (t *selfTracker) suspect() bool {
	return t.run >= 2 && len(t.hosts) >= 2 && len(t.down) == t.canaries
}

// hold decides whether a check's turn to unhealthy waits: only while the probes look
// suspect, and only once per stretch of suspicion. heldAt is the check's own record of when it
// was last held (the success count then). When a success has come since that hold, the
// checker was not isolated after all, so the check turns now; otherwise a checker that reaches
// its own region but nothing beyond it would hold the far checks healthy for ever, because
// the near target's success keeps resetting the suspicion between them.
func (t *selfTracker) hold(heldAt *uint64) bool {
	if !t.suspect() {
		return false
	}
	if *heldAt != 0 && *heldAt != t.successes {
		return false
	}
	*heldAt = t.successes
	return true
}

// health describes the tracker's state.
func (t *selfTracker) health() SelfHealth {
	if !t.isolated {
		return SelfHealth{Healthy: true}
	}
	return SelfHealth{Reason: fmt.Sprintf("isolated: %d probes in a row failed to reach anything across %d+ targets, %d of %d canaries down",
		t.run, len(t.hosts), len(t.down), t.canaries)}
}
