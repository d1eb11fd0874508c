package agent

import (
	"context"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/history"
	"github.com/vigil-dns/vigil/location/verdict"
)

// historyOf turns one verdict change of the engine into a history change, with the counts
// that decided it and the state the history holds as its previous one. Called under l.mu.
func (l *locationState) historyOf(c verdict.Change, now time.Time) history.Change {
	h := history.Change{Check: c.Check, At: now, From: l.hist.State(c.Check)}
	if c.Removed {
		return h
	}
	h.To = c.State.String()
	if v, ok := l.engine.Verdict(c.Check, nil); ok {
		h.Healthy, h.Unhealthy, h.Fresh, h.Stale = v.Counts.Healthy, v.Counts.Unhealthy, v.Counts.Fresh, v.Counts.Stale
	}
	return h
}

// historyChunk bounds the verdict changes recordHistory turns into history changes and
// records at once: a location's first load changes every check's verdict in one step (a
// million), and the history's records of them, their answers and the sets seen, made all at
// once, were hundreds of megabytes live beside everything the location holds.
const historyChunk = 8192

// recordHistory records the verdict changes of the last step, and the changes they made to
// the answers of their record sets, outside the location's lock (the log is synced), a chunk
// at a time. Only runVerdicts calls it, right after step: no step runs in between, so the
// engine still holds the verdicts those changes made (the lock is taken, a chunk at a time,
// for the counts that decided them).
func (n *Node) recordHistory() {
	l := &n.loc
	for from := 0; from < len(l.out); from += historyChunk {
		to := min(from+historyChunk, len(l.out))
		l.mu.Lock()
		for _, c := range l.out[from:to] {
			l.pending = append(l.pending, l.historyOf(c, l.outAt))
		}
		l.mu.Unlock()
		n.recordChanges(l.pending, l.served[from:to])
		clear(l.pending)
		l.pending = l.pending[:0]
	}
	clear(l.out)
	l.out, l.served = scratch(l.out), scratch(l.served)
	l.pending = scratch(l.pending)
}

// recordChanges records verdict changes, and the changes they made to the answers of their
// record sets: only a change that changed what DNS serves (served, by change) can have
// changed an answer, so only its sets are looked at. (A location's first load changes every
// verdict twice, to unknown and to healthy, and serves each check as healthy throughout:
// explaining a million sets twice over allocated nearly 2 GB while the rows arrived.)
func (n *Node) recordChanges(changes []history.Change, served []bool) {
	l := &n.loc
	if len(changes) == 0 {
		return
	}
	var answers []history.AnswerChange
	seen := map[location.SetName]bool{}
	snap := n.dns.Snapshot()
	for k, c := range changes {
		if !served[k] {
			continue
		}
		for _, set := range snap.HealthSetsOf(c.Check) {
			if seen[set] {
				continue
			}
			seen[set] = true
			res, err := n.dns.Explain(set.Name, set.Type, 0)
			if err != nil {
				continue // not installed (a zone that failed): nothing answers from it
			}
			values, lastResort := res.AnsweringFrom(), res.LastResort
			was, wasLR, ok := l.hist.Answering(set.Name, set.Type)
			if !ok {
				// Nothing recorded yet: the set answered as if every record were healthy
				// (what a location serves before its first verdict). An answer that stays so
				// is no change, and is not held: most sets of a large configuration never
				// leave it.
				was, wasLR = res.FailOpen(), false
			}
			if wasLR == lastResort && slices.Equal(was, values) {
				continue
			}
			answers = append(answers, history.AnswerChange{Name: set.Name, Type: set.Type, At: c.At,
				From: was, To: values, LastResort: lastResort})
		}
	}
	if err := l.hist.Record(changes, answers); err != nil {
		n.log.Warn("node: history: recording verdict changes", "err", err)
	}
}

// runHistoryMarks writes the history's mark about once a minute until ctx ends, so that
// availability counts the time the location runs and not the time it does not.
func (n *Node) runHistoryMarks(ctx context.Context) error {
	t := time.NewTicker(20 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if err := n.loc.hist.Mark(now); err != nil {
				n.log.Warn("node: history: writing a mark", "err", err)
			}
		}
	}
}

// CheckHistory returns what this location remembers of check id: its latest verdict changes
// and its availability over 1 h, 24 h and 7 days, at now. ok is false when it holds nothing.
func (n *Node) CheckHistory(id string, now time.Time) (history.CheckHistory, bool, error) {
	if n.dns == nil {
		return history.CheckHistory{}, false, ErrNoLocation
	}
	h, ok := n.loc.hist.Check(id, now)
	return h, ok, nil
}

// HistorySummaries returns every check's state and availability at now, sorted by id, from
// the first id after after, at most limit; next is the cursor of the following page.
func (n *Node) HistorySummaries(after string, limit int, now time.Time) ([]history.CheckHistory, string, error) {
	if n.dns == nil {
		return nil, "", ErrNoLocation
	}
	out, next := n.loc.hist.Summaries(after, limit, now)
	return out, next, nil
}

// AnswerHistory returns the latest changes of what the record sets of name (all when empty)
// answer from, newest first.
func (n *Node) AnswerHistory(name string) ([]history.AnswerChange, error) {
	if n.dns == nil {
		return nil, ErrNoLocation
	}
	return n.loc.hist.Answers(name), nil
}
