package gossip

import (
	"math"
	"time"
)

// How a location's table stores its cells. A million checks reported by six checkers are six
// million cells, so a cell holds no string and no pointer: check ids and reasons are
// numbers into the table's interned strings, stored once however many rows hold them.

// heldCell is one entry of a row as the table holds it: 24 bytes.
type heldCell struct {
	seq         uint64
	latency     uint32 // microseconds, saturating at about 71 minutes
	consecutive uint32
	reason      uint32 // index into the table's reasons
	status      Status
}

// interned gives strings small numbers and counts who refers to each, so that a string held
// by many cells is stored once and a number nobody refers to is reused.
type interned struct {
	ids   map[string]uint32
	names []string
	refs  []uint32
	free  []uint32
}

func newInterned() interned { return interned{ids: map[string]uint32{}} }

// ref returns s's number, counting one more reference to it.
func (in *interned) ref(s string) uint32 {
	if i, ok := in.ids[s]; ok {
		in.refs[i]++
		return i
	}
	var i uint32
	if n := len(in.free); n > 0 {
		i = in.free[n-1]
		in.free = in.free[:n-1]
		in.names[i], in.refs[i] = s, 1
	} else {
		i = uint32(len(in.names))
		in.names = append(in.names, s)
		in.refs = append(in.refs, 1)
	}
	in.ids[s] = i
	return i
}

// hold counts one more reference to number i, which is referred to already.
func (in *interned) hold(i uint32) { in.refs[i]++ }

// unref drops one reference to number i; the last one frees it.
func (in *interned) unref(i uint32) {
	in.refs[i]--
	if in.refs[i] == 0 {
		delete(in.ids, in.names[i])
		in.names[i] = ""
		in.free = append(in.free, i)
	}
}

// lookup returns s's number, if anything refers to s.
func (in *interned) lookup(s string) (uint32, bool) {
	i, ok := in.ids[s]
	return i, ok
}

// name returns the string of number i.
func (in *interned) name(i uint32) string { return in.names[i] }

// len returns how many strings are held.
func (in *interned) len() int { return len(in.ids) }

// pack stores e, changed at seq, as a cell, taking a reference to its reason.
func (t *Table) pack(seq uint64, e Entry) heldCell {
	us := max(e.Latency, 0) / time.Microsecond
	return heldCell{seq: seq, latency: uint32(min(us, math.MaxUint32)), consecutive: e.Consecutive,
		reason: t.reasons.ref(e.Reason), status: e.Status}
}

// entry returns the report a cell holds.
func (t *Table) entry(c heldCell) Entry {
	return Entry{Status: c.status, Consecutive: c.consecutive, Latency: time.Duration(c.latency) * time.Microsecond,
		Reason: t.reasons.name(c.reason)}
}

// cellOf returns row r's cell for check, if it holds one.
func (t *Table) cellOf(r *row, check string) (heldCell, bool) {
	i, ok := t.checks.lookup(check)
	if !ok {
		return heldCell{}, false
	}
	c, ok := r.cells[i]
	return c, ok
}

// setCell sets row r's cell for check to e, changed at seq. Every cell is set here.
func (t *Table) setCell(r *row, check string, seq uint64, e Entry) {
	i, known := t.checks.lookup(check)
	if known {
		if old, ok := r.cells[i]; ok {
			t.reasons.unref(old.reason)
			r.cells[i] = t.pack(seq, e)
			r.sets.add(seq, i, len(r.cells))
			t.markCell(r, i)
			return
		}
	}
	i = t.checks.ref(check)
	r.cells[i] = t.pack(seq, e)
	r.sets.add(seq, i, len(r.cells))
	t.reports++
	t.markCell(r, i)
}

// deleteCell removes row r's cell for check number i, which it holds. Every cell is removed
// here.
func (t *Table) deleteCell(r *row, i uint32) {
	c := r.cells[i]
	t.markCell(r, i) // before unref: a mark holds the check's number
	delete(r.cells, i)
	t.reasons.unref(c.reason)
	t.checks.unref(i)
	t.reports--
}

// clearRow removes every cell of row r, and its log of withdrawals.
func (t *Table) clearRow(r *row) {
	for i := range r.cells {
		t.deleteCell(r, i)
	}
	t.clearLog(r)
	r.sets = setIndex{}
}

// eachCell calls fn with every cell of row r, in no order.
func (t *Table) eachCell(r *row, fn func(check string, seq uint64, e Entry)) {
	for i, c := range r.cells {
		fn(t.checks.name(i), c.seq, t.entry(c))
	}
}
