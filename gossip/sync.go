package gossip

import (
	"slices"
	"sort"
	"time"
)

// Anti-entropy that ships only what differs. A push/pull carries row headers, never cells; a
// node that finds itself behind asks for a row saying what it holds of it (generation and
// sequence), and the answer carries only the changes since then: the cells set after that
// sequence, the withdrawals after it and the latest withdraw-all after it. Cells say what
// was set, but a withdrawn cell is gone, so every row keeps a bounded log of its recent
// withdrawals. A row answers with changes only when it can prove it holds every withdrawal
// since the asker's sequence; otherwise it answers with the whole row, as before. So in a
// steady pool, where nothing changes, a push/pull costs the same at 100 or 1,000,000 checks.

// maxWithdrawLog bounds the withdrawals a row remembers. A peer that missed more than these
// gets the whole row.
const maxWithdrawLog = 128

// loggedWithdrawal is one withdrawal in a row's log: the check by its number in the table's
// interned check ids (the log holds a reference to it), and the sequence of the withdrawal.
type loggedWithdrawal struct {
	seq   uint64
	check uint32
}

// withdrawLog is a row's recent withdrawals. Every withdrawal of the row with a sequence in
// (from, row.seq] is in the log or older than the withdraw-all at wall; so the row can list
// every withdrawal after a sequence s when s >= from, or when wall > from (the withdraw-all
// covers whatever came before it).
type withdrawLog struct {
	entries []loggedWithdrawal // by seq, oldest first; at most maxWithdrawLog
	from    uint64
	wall    uint64 // the latest withdraw-all, 0 if none is known
}

// logWithdraw records that check was withdrawn from row r at seq.
func (t *Table) logWithdraw(r *row, check string, seq uint64) {
	l := &r.log
	if seq <= l.wall || seq <= l.from {
		return // covered by the withdraw-all, or older than the log vouches for
	}
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].seq >= seq })
	if i < len(l.entries) && l.entries[i].seq == seq {
		return // the same change again
	}
	l.entries = slices.Insert(l.entries, i, loggedWithdrawal{seq: seq, check: t.checks.ref(check)})
	if len(l.entries) > maxWithdrawLog {
		t.trimLog(r, l.entries[0].seq)
	}
}

// logWithdrawAll records a withdraw-all of row r at seq: the withdrawals before it need no
// listing any more.
func (t *Table) logWithdrawAll(r *row, seq uint64) {
	l := &r.log
	if seq <= l.wall || seq <= l.from {
		return
	}
	l.wall = seq
	t.dropLogged(r, func(w loggedWithdrawal) bool { return w.seq < seq })
}

// trimLog makes row r's log vouch only for withdrawals after seq, and drops those it need
// not keep.
func (t *Table) trimLog(r *row, seq uint64) {
	r.log.from = max(r.log.from, seq)
	t.dropLogged(r, func(w loggedWithdrawal) bool { return w.seq <= r.log.from })
}

// dropLogged removes the log entries of row r that drop says to, releasing their check ids.
func (t *Table) dropLogged(r *row, drop func(loggedWithdrawal) bool) {
	r.log.entries = slices.DeleteFunc(r.log.entries, func(w loggedWithdrawal) bool {
		if drop(w) {
			t.checks.unref(w.check)
			return true
		}
		return false
	})
}

// clearLog empties row r's log.
func (t *Table) clearLog(r *row) {
	t.dropLogged(r, func(loggedWithdrawal) bool { return true })
	r.log = withdrawLog{}
}

// provable reports whether row r can list every change after since.
func (r *row) provable(since uint64) bool {
	return r.complete() && since <= r.seq && (since >= r.log.from || r.log.wall > r.log.from)
}

// sinceRow returns the changes of checker's row after since, at generation gen, or nil when
// the table cannot prove it holds them all: the row is missing, behind, of another
// generation, older than since, or its log does not reach back to since.
func (t *Table) sinceRow(checker string, gen, since uint64) *sinceRow {
	r := t.rows[checker]
	if r == nil || r.gen != gen || !r.provable(since) {
		return nil
	}
	s := &sinceRow{header: header{checker: r.checker, gen: r.gen, seq: r.seq, beat: r.beat}, since: since}
	if r.log.wall > since && r.log.wall <= r.seq {
		s.wall = r.log.wall
	}
	s.entries = t.changedSince(r, since)
	for _, w := range r.log.entries {
		if w.seq > since && w.seq <= r.seq && w.seq > s.wall {
			s.withdrawn = append(s.withdrawn, withdrawn{check: t.checks.name(w.check), seq: w.seq})
		}
	}
	return s
}

// applySince merges the changes of a row after s.since, which a peer kept: no progress of its
// own (see finish). It applies only to a row that holds everything up to s.since at the same
// generation, which it then holds complete up to s.seq; any other row ignores it, and is
// repaired by a later ask.
func (t *Table) applySince(s *sinceRow, now time.Time) outcome {
	r, o := t.lookup(s.header, now)
	if r == nil {
		return o
	}
	advanced := r.note(s.header)
	if r.gen != s.gen || r.seq < s.since || s.seq <= r.seq {
		return t.noteHeld(r, advanced, now)
	}
	h := header{checker: s.checker, gen: s.gen}
	if s.wall > 0 {
		h.seq = s.wall
		t.change(r, delta{header: h, op: opWithdrawAll})
	}
	for _, w := range s.withdrawn {
		h.seq = w.seq
		t.change(r, delta{header: h, op: opWithdraw, check: w.check})
	}
	for _, e := range s.entries {
		h.seq = e.seq
		t.change(r, delta{header: h, op: opSet, check: e.check, entry: e.entry})
	}
	r.seq = s.seq
	for r.ahead[r.seq+1] {
		r.seq++
	}
	r.settle()
	return t.noteHeld(r, true, now)
}

// applyOwnHeader merges the header of a checker's own row, from the checker itself in a
// push/pull: a timely word of the checker, as its heartbeat is (see finish). It returns
// whether the row is behind, and so worth asking the checker for.
func (t *Table) applyOwnHeader(h header, now time.Time) (outcome, bool) {
	r, o := t.lookup(h, now)
	if r == nil {
		return o, false
	}
	want := r.want
	beat := r.note(h)
	return t.finish(r, beat || h.seq > want, now), !r.complete()
}

// holds returns the generation and sequence of the table's row of checker, and whether it
// has one: what an ask says it holds (zero when nothing).
func (t *Table) holds(checker string) (gen, seq uint64, ok bool) {
	if r := t.rows[checker]; r != nil {
		return r.gen, r.seq, true
	}
	return 0, 0, false
}

// answerFor returns what this table answers to an ask of version v: the changes since what
// the asker holds when it can prove it has them all (version 2 only), else the whole row;
// nothing when it holds no complete row, or an older one than the asker.
func (t *Table) answerFor(a ask, v byte) (*fullRow, *sinceRow) {
	whole, sr := t.answerKind(a, v, -1)
	if whole {
		return t.fullRow(a.checker), nil
	}
	return nil, sr
}

// answerKind says what answerFor answers, without building a whole row: whole, or the changes
// since (non-nil), or nothing. When the changes take more than most bytes encoded (unless
// most < 0), it answers whole without building them.
func (t *Table) answerKind(a ask, v byte, most int) (whole bool, since *sinceRow) {
	r := t.rows[a.checker]
	if r == nil || !r.complete() {
		return false, nil
	}
	if v == wireV1 {
		return true, nil
	}
	switch {
	case r.gen < a.gen, r.gen == a.gen && r.seq < a.seq:
		return false, nil
	case r.gen == a.gen && most >= 0 && t.sinceBytes(r, a.seq, most) > most:
	case r.gen == a.gen:
		if s := t.sinceRow(a.checker, a.gen, a.seq); s != nil {
			return false, s
		}
	}
	return true, nil
}
