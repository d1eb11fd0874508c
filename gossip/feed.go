package gossip

import (
	"math/bits"
	"time"
)

// The table's change feed: what changed since a reader last looked, so that a location
// re-decides only what changed instead of copying the whole table. Changes coalesce: a cell
// changed many times between two drains is one mark, and a row's progress is one flag, so
// the feed never holds more marks than the table has held cells and rows since the last
// drain. The feed is off until a reader turns it on (checkers without a location need none).

// feed is the table's marks since the last drain.
type feed struct {
	rows map[string]*rowMarks // by checker
	// notify receives a value when the feed gains its first mark after a drain began
	// (capacity 1: signals coalesce).
	notify chan struct{}
}

// rowMarks are one row's marks: its progress (or region, or removal), and its cells by
// check number (each mark holds a reference to the number): in a set, or, once they are
// many, in a bitmap. A row that arrives whole marks every cell it holds, a million at a
// million checks, and the location drains them 4,096 at a time: six such rows marked in sets
// held over 60 MB while the location's memory peaked; a bitmap holds them in 125 KB each.
type rowMarks struct {
	row   bool
	cells map[uint32]struct{}
	bits  []uint64 // once not nil, the marks are here (and cells is nil)
	from  int      // the first word of bits that may hold a mark
}

// marksToBitmap is the least marks a row's set holds before they move to a bitmap, provided
// the bitmap (a bit per check number the table holds) is smaller than the set (at least 8
// bytes a mark).
const marksToBitmap = 4096

// mark marks number i; false if it was marked already.
func (m *rowMarks) mark(i uint32, numbers int) bool {
	if m.bits == nil && len(m.cells) >= marksToBitmap && len(m.cells)*64 >= numbers {
		m.bits = make([]uint64, numbers/64+1)
		for j := range m.cells {
			m.bits[j/64] |= 1 << (j % 64)
		}
		m.cells = nil
	}
	if m.bits == nil {
		if m.cells == nil {
			m.cells = map[uint32]struct{}{}
		}
		if _, ok := m.cells[i]; ok {
			return false
		}
		m.cells[i] = struct{}{}
		return true
	}
	w := int(i / 64)
	if w >= len(m.bits) {
		m.bits = append(m.bits, make([]uint64, w+1-len(m.bits))...)
	}
	if m.bits[w]&(1<<(i%64)) != 0 {
		return false
	}
	m.bits[w] |= 1 << (i % 64)
	m.from = min(m.from, w)
	return true
}

// take calls f for marked numbers, unmarking each, until f returns false (that number stays
// marked); it reports whether f stopped it.
func (m *rowMarks) take(f func(i uint32) bool) (stopped bool) {
	if m.bits == nil {
		for i := range m.cells {
			if !f(i) {
				return true
			}
			delete(m.cells, i)
		}
		return false
	}
	for ; m.from < len(m.bits); m.from++ {
		for m.bits[m.from] != 0 {
			b := bits.TrailingZeros64(m.bits[m.from])
			if !f(uint32(m.from*64 + b)) {
				return true
			}
			m.bits[m.from] &^= 1 << b
		}
	}
	return false
}

// RowChange is a checker's row as the table holds it now: its progress, or that the table no
// longer holds it.
type RowChange struct {
	Checker string
	// Region is the checker's region, when known.
	Region string
	// Progress is when this location last saw the row advance while complete (zero: never).
	Progress time.Time
	// Gone says the table no longer holds the row: its reports are gone with it.
	Gone bool
}

// CellChange is one checker's report for one check as the table holds it now.
type CellChange struct {
	Checker string
	Check   string
	// Present says the table holds the report; false means it was withdrawn or removed.
	Present bool
	// Entry and Seq are the report and the row's sequence at its last change, when present.
	Entry Entry
	Seq   uint64
}

// Changes is one drain of the feed: cells first, then the rows they belong to (a row
// appears once for each drain that holds any of its marks).
type Changes struct {
	Cells []CellChange
	Rows  []RowChange
}

// reset empties c, keeping its arrays.
func (c *Changes) reset() {
	clear(c.Cells)
	clear(c.Rows)
	c.Cells, c.Rows = c.Cells[:0], c.Rows[:0]
}

// enableFeed turns the feed on and marks everything the table holds, so that a reader that
// starts late still hears of every row and cell. It returns the feed's signal channel.
func (t *Table) enableFeed() <-chan struct{} {
	if t.feed == nil {
		t.feed = &feed{rows: map[string]*rowMarks{}, notify: make(chan struct{}, 1)}
		for _, r := range t.rows {
			t.markRow(r.checker)
			for i := range r.cells.all {
				t.markCell(r, i)
			}
		}
	}
	return t.feed.notify
}

// marks returns the marks of checker's row, creating them.
func (f *feed) marks(checker string) *rowMarks {
	m := f.rows[checker]
	if m == nil {
		m = &rowMarks{}
		f.rows[checker] = m
		select {
		case f.notify <- struct{}{}:
		default:
		}
	}
	return m
}

// markRow notes that checker's row progressed, changed region or went.
func (t *Table) markRow(checker string) {
	if t.feed != nil {
		t.feed.marks(checker).row = true
	}
}

// markCell notes that row r's cell for check number i changed or went.
func (t *Table) markCell(r *row, i uint32) {
	if t.feed == nil {
		return
	}
	if t.feed.marks(r.checker).mark(i, len(t.checks.names)) {
		t.checks.hold(i)
	}
}

// drain moves up to limit cell marks (and the rows they belong to) into out, as the table
// holds them now, and reports whether marks are left.
func (t *Table) drain(limit int, out *Changes) (more bool) {
	out.reset()
	if t.feed == nil {
		return false
	}
	for checker, m := range t.feed.rows {
		r := t.rows[checker]
		full := m.take(func(i uint32) bool {
			if len(out.Cells) >= limit {
				return false
			}
			cc := CellChange{Checker: checker, Check: t.checks.name(i)}
			if r != nil {
				if c, ok := r.cells.get(i); ok {
					cc.Present, cc.Entry, cc.Seq = true, t.entry(c), c.seq
				}
			}
			out.Cells = append(out.Cells, cc)
			t.checks.unref(i)
			return true
		})
		if full {
			return true
		}
		rc := RowChange{Checker: checker, Gone: r == nil}
		if r != nil {
			rc.Region, rc.Progress = r.region, r.progress
		}
		out.Rows = append(out.Rows, rc)
		delete(t.feed.rows, checker)
	}
	return false
}

// Feed turns on this node's change feed and returns its signal: the channel receives a value
// (signals coalesce) whenever the table changed since Drain last emptied it. Turning the feed
// on marks everything the table holds. Call it once; a location drains the feed, other nodes
// never turn it on.
func (n *Pool) Feed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.table.enableFeed()
}

// Drain fills out with up to limit changed reports and their rows, as the table holds them
// now (regions filled in from membership), and reports whether more changes wait. What it
// hands out is the reader's to keep until its next call with the same out.
func (n *Pool) Drain(limit int, out *Changes) (more bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	more = n.table.drain(limit, out)
	for i := range out.Rows {
		if out.Rows[i].Region == "" {
			out.Rows[i].Region = n.members[out.Rows[i].Checker].Region
		}
	}
	return more
}
