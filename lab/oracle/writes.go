package oracle

import (
	"fmt"
	"slices"
)

// maxProblems bounds the problems a ledger keeps word of (they are all counted).
const maxProblems = 50

// Write is one control-plane write the API acknowledged: Value written to Key, committed at
// raft index Index.
type Write struct {
	Key   string
	Value int
	Index uint64
}

// ReadBack is a linearizable read of the control plane's state: the value each key holds
// in the state at raft index Index (a key missing from Values is absent).
type ReadBack struct {
	Index  uint64
	Values map[string]int
}

// WriteStats are the writes a ledger recorded and what the read-backs found of them.
type WriteStats struct {
	// Skipped counts the writes a writer did not send because their key's last acknowledged
	// write could not be checked yet (no linearizable read could be made).
	Skipped int
	// Attempted counts the writes sent; Acknowledged those the API acknowledged; Failed the
	// others (an error, a timeout: each may or may not have been applied).
	Attempted, Acknowledged, Failed int
	// Checked counts the acknowledged writes a read-back found, with their value, in a state
	// that includes their index. Target: every acknowledged write.
	Checked int
	// Lost counts the acknowledged writes a read-back did not find: the key held an older
	// value, or none, in a state at or after their index. Target 0.
	Lost int
	// Overwritten counts the acknowledged writes whose key held the value of a failed write
	// instead (a timed-out request applied after a later one: legal, and unproven).
	Overwritten int
	// Unchecked counts the acknowledged writes no read-back reached (the last read failed).
	Unchecked int
	// StaleReads counts the acknowledged writes a linearizable read made after them did not
	// include (its state's index was below theirs): a linearizability violation. Target 0.
	StaleReads int
	// Problems says each lost write and each read that did not include an acknowledged index.
	Problems []string
	// ReadBack is the error of the last read-back, empty when it worked.
	ReadBack string
}

// OK reports whether every acknowledged write was checked and none was lost.
func (s *WriteStats) OK() bool {
	return s == nil || (s.Lost == 0 && s.StaleReads == 0 && s.Unchecked == 0 && s.ReadBack == "" &&
		s.Checked+s.Overwritten == s.Acknowledged)
}

// WriteLedger records every control-plane write of a run and checks each acknowledged one
// against linearizable read-backs: a write is checked by the first read-back whose state
// includes its index; until then its key must not be written again (Pending), so that the
// value read is the write's own. It is pure; the writer does the I/O.
type WriteLedger struct {
	stats   WriteStats
	pending []Write        // acknowledged, not yet checked, in order
	failed  map[int]string // value -> key of failed writes
}

// NewWriteLedger returns an empty ledger.
func NewWriteLedger() *WriteLedger { return &WriteLedger{failed: map[int]string{}} }

// Acked records an acknowledged write.
func (l *WriteLedger) Acked(w Write) {
	l.stats.Attempted++
	l.stats.Acknowledged++
	l.pending = append(l.pending, w)
}

// Failed records a write of value to key that got no acknowledgement.
func (l *WriteLedger) Failed(key string, value int) {
	l.stats.Attempted++
	l.stats.Failed++
	l.failed[value] = key
}

// Pending reports whether key has an acknowledged write not yet checked: the key must not be
// written before a read-back checks it.
func (l *WriteLedger) Pending(key string) bool {
	return slices.ContainsFunc(l.pending, func(w Write) bool { return w.Key == key })
}

// Unchecked returns how many acknowledged writes wait for a read-back.
func (l *WriteLedger) Unchecked() int { return len(l.pending) }

// Check checks every pending write whose index rb's state includes.
func (l *WriteLedger) Check(rb ReadBack) {
	l.stats.ReadBack = ""
	keep := l.pending[:0]
	for _, w := range l.pending {
		if w.Index > rb.Index {
			l.stats.StaleReads++
			l.problem(fmt.Sprintf("%s=%d: acknowledged at index %d, but a linearizable read afterwards returned the state at index %d", w.Key, w.Value, w.Index, rb.Index))
			keep = append(keep, w)
			continue
		}
		got, found := rb.Values[w.Key]
		switch {
		case found && got == w.Value:
			l.stats.Checked++
		case found && l.failed[got] == w.Key:
			l.stats.Overwritten++
		default:
			l.stats.Lost++
			l.problem(fmt.Sprintf("%s=%d (index %d) lost: the state at index %d holds %s", w.Key, w.Value, w.Index, rb.Index, describe(got, found)))
		}
	}
	l.pending = keep
}

// ReadFailed records that a read-back could not be made.
func (l *WriteLedger) ReadFailed(err error) { l.stats.ReadBack = err.Error() }

// Stats returns the figures so far; acknowledged writes still pending count as unchecked.
func (l *WriteLedger) Stats() WriteStats {
	s := l.stats
	s.Unchecked = len(l.pending)
	s.Problems = slices.Clone(s.Problems)
	return s
}

// problem keeps word of a problem, up to maxProblems.
func (l *WriteLedger) problem(p string) {
	if len(l.stats.Problems) < maxProblems {
		l.stats.Problems = append(l.stats.Problems, p)
	}
}

// describe says a value read back.
func describe(v int, found bool) string {
	if !found {
		return "nothing"
	}
	return fmt.Sprint(v)
}
