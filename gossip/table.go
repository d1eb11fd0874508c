package gossip

import (
	"sort"
	"time"
)

// maxAhead bounds how many out-of-order deltas a row remembers before it relies on repair.
const maxAhead = 64

// outcome says what a message did to the table.
type outcome uint8

const (
	// outcomeOld: nothing new; the message is not relayed.
	outcomeOld outcome = iota
	// outcomeNew: the table advanced; the message is worth relaying.
	outcomeNew
	// outcomeFull: the row is new and the table holds its limit of rows.
	outcomeFull
)

// cell is one entry of a checker's own row (own.go).
type cell struct {
	seq   uint64
	entry Entry
}

// row is one checker's row as a location holds it.
type row struct {
	checker string
	region  string
	gen     uint64
	seq     uint64 // every change up to seq is applied
	beat    uint64
	want    uint64            // the highest seq heard of; the row is behind while want > seq
	floor   uint64            // a withdraw-all at floor removed every older entry
	cells   cellSet           // by check number (Table.checks)
	tombs   map[string]uint64 // withdrawals newer than seq, against late deltas
	ahead   map[uint64]bool   // applied deltas newer than seq+1
	log     withdrawLog       // recent withdrawals, for answers of changes only (sync.go)
	sets    setIndex          // recent sets, by sequence (seqindex.go)
	// progress is when the row, complete, was last the checker's current row (see finish).
	progress time.Time
	// heard is when the checker last gave timely word of itself here, and heardSeq the
	// sequence its row had then.
	heard    time.Time
	heardSeq uint64
	// touched is when the row last changed at all, for forgetting it.
	touched time.Time
}

func newRow(checker string, gen uint64) *row {
	return &row{checker: checker, gen: gen}
}

// complete reports whether the row holds every change it has heard of.
func (r *row) complete() bool { return r.want <= r.seq }

// Table is a location's table of reports: one row per checker, merged by sequence. It is pure
// data: every method takes the location's clock reading as an argument. It is not safe for
// concurrent use.
type Table struct {
	rows    map[string]*row
	maxRows int
	reports int
	checks  interned // check ids of cells (and of feed marks)
	reasons interned // reasons of cells
	feed    *feed    // nil until a reader turns it on
	// pending holds the rows being assembled from pages, and pendingEntries their entries
	// (pages.go).
	pending        map[string]*assembly
	pendingEntries int
}

// NewTable returns an empty table that holds at most maxRows checkers' rows.
func NewTable(maxRows int) *Table {
	t := &Table{rows: map[string]*row{}, maxRows: maxRows}
	t.checks.init()
	t.reasons.init()
	return t
}

// lookup returns the row of h's checker at h's generation, creating or resetting it, or nil
// when h is of an older generation or the table is full.
func (t *Table) lookup(h header, now time.Time) (*row, outcome) {
	r := t.rows[h.checker]
	switch {
	case r == nil:
		if len(t.rows) >= t.maxRows {
			return nil, outcomeFull
		}
		r = newRow(h.checker, h.gen)
		r.touched = now
		t.rows[h.checker] = r
		t.markRow(h.checker)
	case h.gen < r.gen:
		return nil, outcomeOld
	case h.gen > r.gen:
		// The checker restarted: its old row is void.
		t.clearRow(r)
		region := r.region
		*r = *newRow(h.checker, h.gen)
		r.region, r.touched = region, now
		t.markRow(h.checker)
	}
	return r, outcomeNew
}

// note records what a message tells of the row's progress: the heartbeat, and a sequence the
// row must catch up to. It returns whether the beat advanced.
func (r *row) note(h header) bool {
	r.want = max(r.want, h.seq)
	if h.beat > r.beat {
		r.beat = h.beat
		return true
	}
	return false
}

// finish records a timely word from the checker: its row advanced at now, by the checker's
// heartbeat, own row's header, or a delta carrying a beat newer than the row has heard. The
// row makes progress if it holds what the checker had then.
//
// Progress is evidence that the checker is alive, so only timely words mark it: the checker's
// heartbeats, relayed or not (gossip relays them within a few gossip rounds),
// and the header of its own row from the checker itself in a push/pull (applyOwnHeader; a node
// of wire version 1 sends the whole row). A delta says only what its beat says: a relayed one
// can wait in a relayer's queue behind newer deltas for seconds, and one that arrived after a
// cut with a beat already heard counted the checker fresh for that much longer (sa-east's
// location, TestPartition). An advance that a third node kept (a push/pull digest, a repair
// answer, whole or changes only) may be as old as that node's last word from the checker: it
// marks no progress of its own (see noteHeld), though a row it completes makes the progress
// its last timely word said. Before, when sa-east was cut off, eu-west's location heard
// sa-east's last heartbeat 20s later in a digest from us-east and counted sa-east's reports
// again for a freshness window (a flap).
func (t *Table) finish(r *row, advanced bool, now time.Time) outcome {
	if !advanced {
		return outcomeOld
	}
	r.heard, r.heardSeq = now, r.want
	return t.noteHeld(r, true, now)
}

// noteHeld records an advance that is no timely word of the checker (see finish). A row it
// completes makes the progress of the last timely word, if it holds what that word said.
func (t *Table) noteHeld(r *row, advanced bool, now time.Time) outcome {
	if !advanced {
		return outcomeOld
	}
	r.touched = now
	if r.complete() && r.heardSeq <= r.seq && r.heard.After(r.progress) {
		r.progress = r.heard
		t.markRow(r.checker)
	}
	return outcomeNew
}

// ApplyHeartbeat merges a heartbeat: the row makes progress if it is complete.
func (t *Table) applyHeartbeat(h header, now time.Time) outcome {
	r, o := t.lookup(h, now)
	if r == nil {
		return o
	}
	return t.finish(r, r.note(h), now)
}

// applyDelta merges one change of a row.
func (t *Table) applyDelta(d delta, now time.Time) outcome {
	r, o := t.lookup(d.header, now)
	if r == nil {
		return o
	}
	beat := r.note(d.header)
	advanced := false
	if d.seq > r.seq && !r.ahead[d.seq] {
		t.change(r, d)
		advanced = true
		if d.seq == r.seq+1 {
			r.seq = d.seq
			for r.ahead[r.seq+1] {
				delete(r.ahead, r.seq+1)
				r.seq++
			}
			r.settle()
		} else {
			r.holdAhead(d.seq)
		}
	}
	if beat {
		return t.finish(r, true, now)
	}
	return t.noteHeld(r, advanced, now)
}

// holdAhead remembers that the row holds seq, beyond a gap. When it remembers maxAhead such
// already, it forgets the lowest: the repair that fills the gap answers with the row as the
// checker has it then, which covers the older ones, while the newest are those sent after
// that answer was made, which nothing else brings. Forgetting the newest instead, a row
// under steady churn whose repairs took longer than maxAhead deltas was never complete again
// (TestTableAheadKeepsNewest).
func (r *row) holdAhead(seq uint64) {
	if r.ahead == nil {
		r.ahead = map[uint64]bool{}
	}
	if len(r.ahead) >= maxAhead {
		low := seq
		for s := range r.ahead {
			low = min(low, s)
		}
		if low == seq {
			return
		}
		delete(r.ahead, low)
	}
	r.ahead[seq] = true
}

// change applies a delta's operation to the cells it is newer than.
func (t *Table) change(r *row, d delta) {
	switch d.op {
	case opWithdraw:
		t.logWithdraw(r, d.check, d.seq)
	case opWithdrawAll:
		t.logWithdrawAll(r, d.seq)
	}
	if d.seq < r.floor {
		return
	}
	switch d.op {
	case opSet:
		if c, ok := t.cellOf(r, d.check); ok && c.seq >= d.seq || r.tombs[d.check] >= d.seq {
			return
		}
		t.setCell(r, d.check, d.seq, d.entry)
	case opWithdraw:
		c, ok := t.cellOf(r, d.check)
		if ok && c.seq >= d.seq {
			return
		}
		if ok {
			i, _ := t.checks.lookup(d.check)
			t.deleteCell(r, i)
		}
		if r.tombs == nil {
			r.tombs = map[string]uint64{}
		}
		// An older withdrawal arriving late must not lower a newer one's tomb.
		r.tombs[d.check] = max(r.tombs[d.check], d.seq)
	case opWithdrawAll:
		for i, c := range r.cells.all {
			if c.seq < d.seq {
				t.deleteCell(r, i)
			}
		}
		r.sets.dropBefore(d.seq)
		r.floor = d.seq
	}
}

// settle forgets withdrawals that the row's sequence now covers.
func (r *row) settle() {
	for check, seq := range r.tombs {
		if seq <= r.seq {
			delete(r.tombs, check)
		}
	}
	for seq := range r.ahead {
		if seq <= r.seq {
			delete(r.ahead, seq)
		}
	}
}

// applyRow merges a whole row: it replaces the held row when newer, keeping only changes that
// are newer still. live says whether the row comes from its checker itself; a row a third node
// kept marks no progress (see finish).
func (t *Table) applyRow(f *fullRow, now time.Time, live bool) outcome {
	r, o := t.lookup(f.header, now)
	if r == nil {
		return o
	}
	advanced := r.note(f.header)
	if f.seq > r.seq {
		// Nor of when its cells were set: the index vouches only for what comes after it
		// (and so is not filled with a million out-of-order sets).
		r.sets.trim(f.seq)
		t.replaceCells(r, f)
		if r.floor <= f.seq {
			r.floor = 0
		}
		// A whole row says nothing of what was withdrawn before it.
		t.trimLog(r, f.seq)
		r.seq = f.seq
		for r.ahead[r.seq+1] {
			r.seq++
		}
		r.settle()
		advanced = true
	}
	if !live {
		return t.noteHeld(r, advanced, now)
	}
	return t.finish(r, advanced, now)
}

// replaceCells makes row r hold f's cells, except where r holds a newer change: a cell newer
// than f, or a withdrawal newer than f. Only the cells that differ are written (and marked in
// the feed).
func (t *Table) replaceCells(r *row, f *fullRow) {
	fromRow := r.floor <= f.seq // else a withdraw-all newer than f removed all of f
	superseded := 0
	for _, c := range r.cells.all {
		if c.seq <= f.seq {
			superseded++
		}
	}
	if fromRow {
		for _, e := range f.entries {
			c, had := t.cellOf(r, e.check)
			if had && c.seq >= e.seq || r.tombs[e.check] > f.seq {
				continue // newer here, unchanged, or withdrawn since f
			}
			t.setCell(r, e.check, e.seq, e.entry)
		}
	}
	if superseded == 0 {
		return
	}
	// Cells f supersedes but does not hold were withdrawn.
	var inRow map[uint32]struct{}
	if fromRow {
		inRow = make(map[uint32]struct{}, len(f.entries))
		for _, e := range f.entries {
			if i, ok := t.checks.lookup(e.check); ok {
				inRow[i] = struct{}{}
			}
		}
	}
	for i, c := range r.cells.all {
		if _, ok := inRow[i]; !ok && c.seq <= f.seq {
			t.deleteCell(r, i)
		}
	}
}

// applyDigest merges the headers of a peer's rows: heartbeats it heard that this location did
// not, which mark no progress (see finish). It returns the checkers whose rows the peer holds
// newer than here. It creates no row:
// live checkers make themselves known by their heartbeats, and rows of checkers long gone,
// which some peer has not forgotten yet, do not come back.
func (t *Table) applyDigest(hs []header, now time.Time) (behind []string) {
	for _, h := range hs {
		if t.rows[h.checker] == nil {
			continue
		}
		r, _ := t.lookup(h, now)
		if r == nil {
			continue
		}
		t.noteHeld(r, r.note(h), now)
		if !r.complete() {
			behind = append(behind, h.checker)
		}
	}
	return behind
}

// behind reports whether the table's row of checker misses changes it has heard of.
func (t *Table) behind(checker string) bool {
	r := t.rows[checker]
	return r != nil && !r.complete()
}

// lacking returns, sorted, up to limit checkers whose rows miss changes they have heard of.
func (t *Table) lacking(limit int) []string {
	var out []string
	for id, r := range t.rows {
		if !r.complete() {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// digest returns the header of every row.
func (t *Table) digest() []header {
	out := make([]header, 0, len(t.rows))
	for _, r := range t.rows {
		out = append(out, header{checker: r.checker, gen: r.gen, seq: r.seq, beat: r.beat})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].checker < out[j].checker })
	return out
}

// fullRow returns the whole row of checker as held, or nil.
func (t *Table) fullRow(checker string) *fullRow {
	r := t.rows[checker]
	if r == nil {
		return nil
	}
	f := &fullRow{header: header{checker: r.checker, gen: r.gen, seq: r.seq, beat: r.beat}}
	f.entries = make([]rowEntry, 0, r.cells.len())
	t.eachCell(r, func(check string, seq uint64, e Entry) {
		if seq <= r.seq {
			f.entries = append(f.entries, rowEntry{check: check, seq: seq, entry: e})
		}
	})
	sort.Slice(f.entries, func(i, j int) bool { return f.entries[i].check < f.entries[j].check })
	return f
}

// setRegion records the region of a checker whose row the table holds.
func (t *Table) setRegion(checker, region string) {
	if r := t.rows[checker]; r != nil && r.region != region {
		r.region = region
		t.markRow(checker)
	}
}

// Len returns how many reports and how many checkers' rows the table holds.
func (t *Table) Len() (reports, checkers int) { return t.reports, len(t.rows) }

// forget removes the rows that have not changed since before cutoff, except those keep says
// to keep, and returns how many it removed.
func (t *Table) forget(cutoff time.Time, keep func(checker string) bool) int {
	n := 0
	for id, r := range t.rows {
		if r.touched.Before(cutoff) && !keep(id) {
			t.clearRow(r)
			delete(t.rows, id)
			t.markRow(id)
			n++
		}
	}
	return n
}
