package gossip

import (
	"math"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/internal/keyindex"
	"github.com/vigil-dns/vigil/internal/slots"
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
	status      checker.Status
	held        bool // in a dense cellSet, whether the cell is there
}

// cellSet is a row's cells by check number. A row of a million checks held six times in a
// map cost 41 to 79 bytes a cell (the map's slots, its free room and its growth), so a row
// that holds at least half of the check numbers up to its highest keeps its cells in an
// array indexed by number instead: 24 bytes a cell (at most 48 per cell held), and a scan
// reads memory in order. A row of few checks among many numbers (a checker's share of a
// large fleet's checks) stays a map: an array would cost every number below its highest.
type cellSet struct {
	m     map[uint32]heldCell // while sparse; nil while dense or empty
	dense []heldCell          // while dense: by check number, cells not held marked so
	n     int                 // cells held
	top   uint32              // the highest number put while a map (may be gone since)
}

// Bounds of a cellSet's form.
const (
	// denseMin is the fewest cells that make a set dense; smaller ones stay maps.
	denseMin = 64
	// denseSparse: a dense set holding under 1/denseSparse of its array goes back to a map.
	denseSparse = 8
)

// get returns the cell of check number i, if held.
func (s *cellSet) get(i uint32) (heldCell, bool) {
	if s.dense != nil {
		if int(i) < len(s.dense) && s.dense[i].held {
			return s.dense[i], true
		}
		return heldCell{}, false
	}
	c, ok := s.m[i]
	return c, ok
}

// put sets the cell of check number i and reports whether it is new. It may change the
// set's form, so it is not called while ranging over the set.
func (s *cellSet) put(i uint32, c heldCell) (added bool) {
	c.held = true
	if s.dense != nil {
		if s.n+1 < max(int(i)+1, len(s.dense))/denseSparse {
			s.toMap()
			return s.put(i, c)
		}
		if int(i) >= len(s.dense) {
			s.grow(int(i) + 1)
		}
		added = !s.dense[i].held
		s.dense[i] = c
		if added {
			s.n++
		}
		return added
	}
	if s.m == nil {
		s.m = map[uint32]heldCell{}
	}
	_, had := s.m[i]
	s.m[i] = c
	if had {
		return false
	}
	s.n++
	s.top = max(s.top, i)
	if s.n >= denseMin && int(s.top)+1 <= 2*s.n {
		s.toDense()
	}
	return true
}

// del removes the cell of check number i, which is held. Safe while ranging over the set.
func (s *cellSet) del(i uint32) {
	if s.dense != nil {
		s.dense[i] = heldCell{}
	} else {
		delete(s.m, i)
	}
	if s.n--; s.n == 0 {
		*s = cellSet{}
	}
}

// len returns how many cells are held.
func (s *cellSet) len() int { return s.n }

// all yields every cell held with its check number: in order of numbers while dense, in no
// order while a map. The function may delete the cell it is given (del), nothing else.
func (s *cellSet) all(yield func(uint32, heldCell) bool) {
	if s.dense != nil {
		for i, c := range s.dense {
			if c.held && !yield(uint32(i), c) {
				return
			}
		}
		return
	}
	for i, c := range s.m {
		if !yield(i, c) {
			return
		}
	}
}

// grow makes the dense array n long, with room for an eighth more: the room append leaves
// (a quarter) would be a quarter more bytes a cell.
func (s *cellSet) grow(n int) {
	if n <= cap(s.dense) {
		s.dense = s.dense[:n] // beyond its length the array is zero: it never shrinks
		return
	}
	d := make([]heldCell, n, max(n, len(s.dense)+len(s.dense)/8+denseMin))
	copy(d, s.dense)
	s.dense = d
}

func (s *cellSet) toDense() {
	d := make([]heldCell, s.top+1)
	for i, c := range s.m {
		d[i] = c
	}
	s.dense, s.m = d, nil
}

func (s *cellSet) toMap() {
	m := make(map[uint32]heldCell, s.n)
	top := uint32(0)
	for i, c := range s.dense {
		if c.held {
			m[uint32(i)] = c
			top = uint32(i)
		}
	}
	s.m, s.dense, s.top = m, nil, top
}

// interned gives strings small numbers and counts who refers to each, so that a string held
// by many cells is stored once and a number nobody refers to is reused. Its index finds a
// string among names (5 to 8 bytes a string, where a map from string to number cost about
// 56 at a million check ids); it refers to the interned it is in, which is therefore not
// copied once init made it.
type interned struct {
	ids   *keyindex.Index // string -> number, by names[number]
	names []string
	refs  []uint32
	free  slots.Free[uint32]
}

// init makes in empty.
func (in *interned) init() {
	*in = interned{}
	in.ids = keyindex.New(func(i int32) string { return in.names[i] })
}

// ref returns s's number, counting one more reference to it.
func (in *interned) ref(s string) uint32 {
	if i, ok := in.ids.Get(s); ok {
		in.refs[i]++
		return uint32(i)
	}
	i := in.free.Take()
	*slots.Place(&in.names, i), *slots.Place(&in.refs, i) = s, 1
	in.ids.Put(s, int32(i))
	return i
}

// hold counts one more reference to number i, which is referred to already.
func (in *interned) hold(i uint32) { in.refs[i]++ }

// unref drops one reference to number i; the last one frees it.
func (in *interned) unref(i uint32) {
	in.refs[i]--
	if in.refs[i] == 0 {
		in.ids.Delete(in.names[i])
		in.names[i] = ""
		in.free.Release(i)
	}
}

// lookup returns s's number, if anything refers to s.
func (in *interned) lookup(s string) (uint32, bool) {
	i, ok := in.ids.Get(s)
	return uint32(i), ok
}

// name returns the string of number i.
func (in *interned) name(i uint32) string { return in.names[i] }

// len returns how many strings are held.
func (in *interned) len() int { return in.ids.Len() }

// pack stores e, changed at seq, as a cell, taking a reference to its reason.
func (t *Table) pack(seq uint64, e Entry) heldCell {
	us := max(e.Latency, 0) / time.Microsecond
	return heldCell{seq: seq, latency: uint32(min(us, math.MaxUint32)), consecutive: e.Consecutive,
		reason: t.reasons.ref(e.Reason), status: e.Status}
}

// entry returns the report a cell holds.
func (t *Table) entry(c heldCell) Entry { return unpack(c, t.reasons.names) }

// unpack returns the report a cell holds, its reason by number in reasons.
func unpack(c heldCell, reasons []string) Entry {
	return Entry{Status: c.status, Consecutive: c.consecutive, Latency: time.Duration(c.latency) * time.Microsecond,
		Reason: reasons[c.reason]}
}

// cellOf returns row r's cell for check, if it holds one.
func (t *Table) cellOf(r *row, check string) (heldCell, bool) {
	i, ok := t.checks.lookup(check)
	if !ok {
		return heldCell{}, false
	}
	return r.cells.get(i)
}

// setCell sets row r's cell for check to e, changed at seq. Every cell is set here.
func (t *Table) setCell(r *row, check string, seq uint64, e Entry) {
	i, known := t.checks.lookup(check)
	if known {
		if old, ok := r.cells.get(i); ok {
			t.reasons.unref(old.reason)
			r.cells.put(i, t.pack(seq, e))
			r.sets.add(seq, i, r.cells.len())
			t.markCell(r, i)
			return
		}
	}
	i = t.checks.ref(check)
	r.cells.put(i, t.pack(seq, e))
	r.sets.add(seq, i, r.cells.len())
	t.reports++
	t.markCell(r, i)
}

// deleteCell removes row r's cell for check number i, which it holds. Every cell is removed
// here.
func (t *Table) deleteCell(r *row, i uint32) {
	c, _ := r.cells.get(i)
	t.markCell(r, i) // before unref: a mark holds the check's number
	r.cells.del(i)
	t.reasons.unref(c.reason)
	t.checks.unref(i)
	t.reports--
}

// clearRow removes every cell of row r, and its log of withdrawals.
func (t *Table) clearRow(r *row) {
	for i := range r.cells.all {
		t.deleteCell(r, i)
	}
	t.clearLog(r)
	r.sets = setIndex{}
}

// eachCell calls fn with every cell of row r, in no order.
func (t *Table) eachCell(r *row, fn func(check string, seq uint64, e Entry)) {
	for i, c := range r.cells.all {
		fn(t.checks.name(i), c.seq, t.entry(c))
	}
}
