package gossip

import (
	"cmp"
	"slices"
	"sort"
)

// A row's index by sequence, so that an answer of the changes since a sequence costs what
// changed since then, not what the row holds (without it, a row of 1,000,000 checks takes a
// scan of every cell per answer). The index lists the check of each recent set, by sequence; a
// cell set again, withdrawn or removed leaves a stale entry behind, which a lookup skips: an
// entry counts only while the row's cell of its check still has its sequence.
//
// The index is bounded by the row's size: it keeps at least setIndexKeep(cells) of the latest
// sets and at most twice that (of the most cells the row held since its last withdraw-all), so
// its memory is at most 8 bytes per cell (and 128 KiB) and a trim moves each entry once. An answer since a sequence older than the index reaches falls
// back to a scan of the row (scanSince): such an answer lists at least as many changes as the
// index keeps.

// Bounds of a row's index, in entries.
const (
	minSetIndex = 64
	maxSetIndex = 4096
)

// loggedSet is one set of a row's cell: the check by its number in the table's interned check
// ids (no reference is held: a lookup checks the cell's sequence before naming it), and the
// sequence of the set.
type loggedSet struct {
	seq   uint64
	check uint32
}

// setIndex lists, by sequence, every set of the row's cells with a sequence after from that
// is still the cell's latest (and maybe older sets since superseded).
type setIndex struct {
	entries []loggedSet // by seq, oldest first
	from    uint64
}

// setIndexKeep is how many sets the index of a row of cells keeps at least.
func setIndexKeep(cells int) int { return min(max(cells/4, minSetIndex), maxSetIndex) }

// add records that check was set at seq, in a row of cells.
func (x *setIndex) add(seq uint64, check uint32, cells int) {
	if seq <= x.from {
		return
	}
	i := len(x.entries)
	if i > 0 && x.entries[i-1].seq >= seq {
		// Out of order: a delta ahead of the row's sequence, or one that filled a gap.
		i = sort.Search(len(x.entries), func(i int) bool { return x.entries[i].seq >= seq })
		if i < len(x.entries) && x.entries[i].seq == seq {
			x.entries[i].check = check
			return
		}
	}
	x.entries = slices.Insert(x.entries, i, loggedSet{seq: seq, check: check})
	if keep := setIndexKeep(cells); len(x.entries) > 2*keep {
		x.trim(x.entries[len(x.entries)-keep-1].seq)
	}
}

// trim makes the index vouch only for sets after seq.
func (x *setIndex) trim(seq uint64) {
	if seq <= x.from {
		return
	}
	x.from = seq
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].seq > seq })
	x.entries = slices.Delete(x.entries, 0, i)
}

// dropBefore forgets the sets before seq, whose cells a withdraw-all at seq removed: the
// index still vouches for every set after from.
func (x *setIndex) dropBefore(seq uint64) {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].seq >= seq })
	x.entries = slices.Delete(x.entries, 0, i)
}

// changedSince returns the cells of row r set after since (up to r.seq), by sequence: by the
// index when it reaches back to since (which lists them so), else by a scan of the row.
func (t *Table) changedSince(r *row, since uint64) []rowEntry {
	x := &r.sets
	if since < x.from {
		return t.scanSince(r, since)
	}
	var out []rowEntry
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].seq > since })
	for _, s := range x.entries[i:] {
		if s.seq > r.seq {
			break
		}
		if c, ok := r.cells.get(s.check); ok && c.seq == s.seq {
			out = append(out, rowEntry{check: t.checks.name(s.check), seq: c.seq, entry: t.entry(c)})
		}
	}
	return out
}

// sinceBytes returns how many bytes the changes of row r after since (up to r.seq) take
// encoded, their sets and withdrawals as appendSince writes them, stopping past most: by the
// index when it reaches back to since, else by a scan that allocates nothing. An answer that
// would not fit a page is so known before it is built: before, a bound by the fewest bytes
// an entry can take (7) let answers of up to three times a page be listed, sorted and
// encoded under the node's lock, then dropped for the whole row.
func (t *Table) sinceBytes(r *row, since uint64, most int) int {
	n := 0
	for _, w := range r.log.entries {
		if w.seq > since && w.seq <= r.seq {
			n += stringSize(t.checks.name(w.check)) + uvarintSize(w.seq)
		}
	}
	add := func(i uint32, c heldCell) bool {
		n += stringSize(t.checks.name(i)) + uvarintSize(c.seq) + t.entrySize(c)
		return n <= most
	}
	if x := &r.sets; since >= x.from {
		i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].seq > since })
		for _, s := range x.entries[i:] {
			if s.seq > r.seq {
				break
			}
			if c, ok := r.cells.get(s.check); ok && c.seq == s.seq && !add(s.check, c) {
				break
			}
		}
		return n
	}
	for i, c := range r.cells.all {
		if c.seq > since && c.seq <= r.seq && !add(i, c) {
			break
		}
	}
	return n
}

// entrySize is how many bytes appendEntry writes of the report cell c holds.
func (t *Table) entrySize(c heldCell) int {
	return 1 + uvarintSize(uint64(c.consecutive)) + uvarintSize(uint64(c.latency)) +
		stringSize(clampReason(t.reasons.name(c.reason)))
}

func stringSize(s string) int { return uvarintSize(uint64(len(s))) + len(s) }

func uvarintSize(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// scanSince returns the cells of row r set after since (up to r.seq), by sequence, by looking
// at every cell: the way every answer was built before the index. (They were sorted by check
// id, which at 100,000 cells cost a location more than its re-decisions while it answered
// checkers' repairs; an asker takes them in any order, and in order of sequence it indexes
// them without moving any.)
func (t *Table) scanSince(r *row, since uint64) []rowEntry {
	var out []rowEntry
	for i, c := range r.cells.all {
		if c.seq > since && c.seq <= r.seq {
			out = append(out, rowEntry{check: t.checks.name(i), seq: c.seq, entry: t.entry(c)})
		}
	}
	sortBySeq(out, since)
	return out
}

// sortBySeq sorts entries of sequences after since by sequence. A row's cells have distinct
// sequences, mostly dense after since (every change of a row takes the next), so they are
// placed by sequence in one pass when their span is at most four times their number; else,
// or when two share a sequence, compared. (Comparing was over half the CPU of a location at
// 100,000 checks answering checkers' repairs with no change, all of it under the node's lock.)
func sortBySeq(es []rowEntry, since uint64) {
	if len(es) < 2 {
		return
	}
	hi := since
	for _, e := range es {
		hi = max(hi, e.seq)
	}
	if span := hi - since; span <= 4*uint64(len(es)) {
		at := make([]int32, span)
		for i := range at {
			at[i] = -1
		}
		distinct := true
		for i, e := range es {
			if at[e.seq-since-1] >= 0 {
				distinct = false
				break
			}
			at[e.seq-since-1] = int32(i)
		}
		if distinct {
			sorted := make([]rowEntry, 0, len(es))
			for _, i := range at {
				if i >= 0 {
					sorted = append(sorted, es[i])
				}
			}
			copy(es, sorted)
			return
		}
	}
	slices.SortFunc(es, func(a, b rowEntry) int { return cmp.Compare(a.seq, b.seq) })
}
