package gossip

import (
	"strings"
	"time"
)

// joinLogEvery bounds how often the same failure to join is logged again.
const joinLogEvery = time.Minute

// JoinFailure is the last failure of a node alone in the pool to join it through its seeds.
type JoinFailure struct {
	// Peers are the addresses tried; Cause says why it failed in a few words ("connection
	// refused", "timeout", "closed by the peer"), Err is memberlist's error; At is when.
	Peers []string
	Cause string
	Err   string
	At    time.Time
}

// joinLog is what the pool has logged of its failures to join while alone. Guarded by
// Pool.mu.
type joinLog struct {
	last     *JoinFailure // nil once joined
	logged   time.Time    // when the current cause was last logged
	since    int          // failures of the current cause since it was logged
	failures int          // failures since the pool was last joined
	first    time.Time    // of the first failure since the pool was last joined
}

// joinCause names why a join failed.
func joinCause(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "connection refused"):
		return "connection refused"
	case strings.Contains(s, "timeout"), strings.Contains(s, "deadline exceeded"):
		return "timeout"
	case strings.Contains(s, "no such host"):
		return "DNS lookup"
	case strings.Contains(s, "crypt"), strings.Contains(s, "EOF"), strings.Contains(s, "reset by peer"):
		return "closed by the peer (a different gossip key, or not a gossip port?)"
	}
	return "unreachable"
}

// noteJoinFailure logs that a node alone in the pool failed to join through peers: at WARN
// the first time and at each change of cause, the same cause again at most once every
// joinLogEvery with the count since.
func (n *Pool) noteJoinFailure(peers []string, err error) {
	cause := joinCause(err)
	now := time.Now()
	n.mu.Lock()
	j := &n.joins
	changed := j.last == nil || j.last.Cause != cause
	if j.failures == 0 {
		j.first = now
	}
	j.failures++
	j.since++
	due := changed || now.Sub(j.logged) >= joinLogEvery
	since := j.since
	if due {
		j.logged, j.since = now, 0
	}
	j.last = &JoinFailure{Peers: append([]string(nil), peers...), Cause: cause, Err: err.Error(), At: now}
	n.mu.Unlock()
	if !due {
		return
	}
	attrs := []any{"peers", strings.Join(peers, ","), "cause", cause, "err", err,
		"hint", "this node hears no other: a checker's reports reach no location and a location hears no checker; check -join, the gossip key and that the peers run"}
	if !changed {
		attrs = append(attrs, "failures_since_last_log", since)
	}
	n.log.Warn("gossip: cannot join the pool", attrs...)
}

// noteJoined logs at INFO that the pool is joined after failures.
func (n *Pool) noteJoined() {
	n.mu.Lock()
	j := n.joins
	n.joins = joinLog{}
	n.mu.Unlock()
	if j.last != nil {
		n.log.Info("gossip: joined the pool", "after_failures", j.failures, "failing_for", time.Since(j.first).Round(time.Millisecond).String())
	}
}

// LastJoinFailure returns the last failure to join the pool while alone; false once joined
// or when none failed.
func (n *Pool) LastJoinFailure() (JoinFailure, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.joins.last == nil {
		return JoinFailure{}, false
	}
	return *n.joins.last, true
}
