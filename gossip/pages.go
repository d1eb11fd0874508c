package gossip

import (
	"iter"
	"slices"
	"sort"
	"time"
)

// Whole rows in pages. A row over MaxMessageSize (about 550,000 checks) could not be sent at
// all, so a location that joined late never got the row of a checker of a million checks. An
// answer that is a whole row larger than one page goes as pages of at most pageSize bytes,
// each with the row's header, the answer's number (set), the page's number and whether it is
// the last; the answerer builds them all at once, so they are one version of the row. The
// asker assembles them aside from its table, at most one assembly per checker and
// maxAssemblies in all, and applies the row only when it holds every page of one set: a half
// row is never the checker's row (a cell it lacks would read as withdrawn). Pages of another
// answer of the same version are ignored while the assembly lives: cells are paged in no fixed
// order, so two answers' pages do not mix (TestPagesRandom found a cell lost that way). An
// assembly is dropped when a page of a newer version of the row arrives, when the table holds
// that version or a newer one already, or when no page came for pageIdle; a lost page so costs
// one more ask, after pageIdle.
//
// The complete row is applied as any answer is: a copy a peer kept, which marks no progress
// of its own (see finish).

// Bounds of pages and of their assembly.
const (
	// pageSize bounds one page: far under MaxMessageSize, so that neither end holds a huge
	// message and a stream carries it within memberlist's timeouts.
	pageSize = 2 << 20
	// maxAssemblies bounds the rows assembled at once.
	maxAssemblies = 4
	// maxPendingEntries bounds the entries of all assemblies together (at about 90 bytes
	// each as decoded, about 380 MB).
	maxPendingEntries = 4 << 20
	// pageIdle is how long an assembly waits for its next page.
	pageIdle = 10 * time.Second
	// maxAnswerBytes bounds the messages of one answer; what is left out is asked again.
	maxAnswerBytes = 64 << 20
)

// assembly is a row being assembled from its pages.
type assembly struct {
	header
	set     uint64
	pages   map[uint32]packedPage
	last    int // the number of the last page, -1 until it arrives
	top     int // the highest number of a page held
	entries int
	touched time.Time // when the latest page arrived
}

// newer reports whether a is of a later version of a row than b (beats aside).
func newer(a, b header) bool { return a.gen > b.gen || a.gen == b.gen && a.seq > b.seq }

// applyPage takes one page of a whole row; the page that completes its row applies the row.
// A page of a row version the table holds already, or of an older version than the one
// being assembled, is old.
func (t *Table) applyPage(p *rowPage, now time.Time) outcome {
	t.expirePages(now)
	if r := t.rows[p.checker]; r != nil && !newer(p.header, header{gen: r.gen, seq: r.seq}) {
		t.dropAssembly(p.checker)
		return outcomeOld
	}
	a := t.pending[p.checker]
	if a != nil && (newer(a.header, p.header) || !newer(p.header, a.header) && p.set != a.set) {
		return outcomeOld
	}
	if a != nil && newer(p.header, a.header) {
		t.dropAssembly(p.checker)
		a = nil
	}
	if a == nil {
		if len(t.pending) >= maxAssemblies {
			return outcomeFull
		}
		a = &assembly{header: p.header, set: p.set, pages: map[uint32]packedPage{}, last: -1}
		if t.pending == nil {
			t.pending = map[string]*assembly{}
		}
		t.pending[p.checker] = a
	}
	if _, dup := a.pages[p.index]; dup {
		return outcomeOld
	}
	// Pages of one version of a row agree on which is the last.
	if p.last && (a.last >= 0 || a.top > int(p.index)) || a.last >= 0 && int(p.index) > a.last {
		t.dropAssembly(p.checker)
		return outcomeOld
	}
	if t.pendingEntries+len(p.entries) > maxPendingEntries {
		t.dropAssembly(p.checker)
		return outcomeFull
	}
	if p.last {
		a.last = int(p.index)
	}
	a.top = max(a.top, int(p.index))
	a.pages[p.index] = pack(p.entries)
	a.entries += len(p.entries)
	t.pendingEntries += len(p.entries)
	a.beat = max(a.beat, p.beat)
	a.touched = now
	if a.last < 0 || len(a.pages) != a.last+1 {
		return outcomeNew
	}
	f := &fullRow{header: a.header, entries: make([]rowEntry, 0, a.entries)}
	for i := range a.last + 1 {
		var ok bool
		if f.entries, ok = t.unpack(a.pages[uint32(i)], f.entries); !ok {
			t.dropAssembly(p.checker) // not what was read and checked: cannot happen
			return outcomeOld
		}
	}
	t.dropAssembly(p.checker)
	return t.applyRow(f, now, false)
}

// packedPage is a page's entries as an assembly holds them: encoded as on the wire, about 17
// bytes an entry at a million checks instead of the 64 of an entry decoded and its check id.
// Four rows of a million assembled at once held 250 MB decoded, while the location's first
// load (six rows of a million arriving) was at its peak of memory.
type packedPage struct {
	n int
	b []byte
}

// pack encodes entries for an assembly to hold.
func pack(entries []rowEntry) packedPage {
	b := make([]byte, 0, 24*len(entries))
	for _, e := range entries {
		b = appendRowEntry(b, e)
	}
	if cap(b)-len(b) > len(b)/8 {
		b = slices.Clone(b)
	}
	return packedPage{n: len(entries), b: b}
}

// unpack appends the entries of a packed page to dst, their check ids and reasons the
// table's own strings where it holds them (a location holds the same checks in every
// checker's row: decoding a row allocates no id). ok is false when the page does not decode.
func (t *Table) unpack(pp packedPage, dst []rowEntry) (_ []rowEntry, ok bool) {
	r := reader{b: pp.b}
	for range pp.n {
		e := rowEntry{check: r.idIn(&t.checks), seq: r.uvarint()}
		e.entry = r.entryIn(&t.reasons)
		dst = append(dst, e)
	}
	return dst, r.err == nil && len(r.b) == 0
}

// dropAssembly forgets the assembly of checker's row, if any.
func (t *Table) dropAssembly(checker string) {
	if a := t.pending[checker]; a != nil {
		t.pendingEntries -= a.entries
		delete(t.pending, checker)
	}
}

// expirePages drops the assemblies that waited pageIdle for a page.
func (t *Table) expirePages(now time.Time) {
	for c, a := range t.pending {
		if now.Sub(a.touched) >= pageIdle {
			t.dropAssembly(c)
		}
	}
}

// assembling reports whether checker's row is being assembled: its pages are arriving, so it
// is not worth asking for again.
func (t *Table) assembling(checker string, now time.Time) bool {
	a := t.pending[checker]
	return a != nil && now.Sub(a.touched) < pageIdle
}

// rowPages encodes the whole row of checker in pages of at most limit bytes, as answer set,
// or returns nil when the table holds no complete row of it or the row needs more than
// maxRowPages pages.
func (t *Table) rowPages(checker string, set uint64, limit int) [][]byte {
	p := t.copyRow(checker, set)
	if p == nil {
		return nil
	}
	return encodePages(p.h, set, limit, p)
}

// pagedRow is a whole row copied out of the table, to be encoded without the table's lock:
// at a million checks the encoding takes seconds. The copy is of the cells as the table
// holds them, numbered, and of the table's lists of check ids and reasons by number (the
// strings themselves are shared): a few copies of memory under the lock instead of a
// report built per cell (about 32 + 16 bytes a cell held instead of 64 and more; the ids'
// list is as long as the table's numbers).
type pagedRow struct {
	h       header
	set     uint64
	cells   []numberedCell
	dense   []heldCell // a dense row's array as copied; its cells are at the numbers in held
	held    []uint32   // of a dense row, listed when first read (4 bytes a cell, not 32)
	listed  bool
	checks  []string
	reasons []string
}

// numberedCell is a cell with its check's number.
type numberedCell struct {
	i uint32
	c heldCell
}

func (p *pagedRow) len() int {
	if p.dense != nil {
		p.number()
		return len(p.held)
	}
	return len(p.cells)
}

func (p *pagedRow) at(k int) rowEntry {
	if p.dense != nil {
		p.number()
		i := p.held[k]
		return rowEntry{check: p.checks[i], seq: p.dense[i].seq, entry: unpack(p.dense[i], p.reasons)}
	}
	nc := p.cells[k]
	return rowEntry{check: p.checks[nc.i], seq: nc.c.seq, entry: unpack(nc.c, p.reasons)}
}

// copyRow copies the complete row of checker, as answer set; nil when the table holds no
// complete row of it.
func (t *Table) copyRow(checker string, set uint64) *pagedRow {
	r := t.rows[checker]
	if r == nil || !r.complete() {
		return nil
	}
	p := &pagedRow{h: header{checker: r.checker, gen: r.gen, seq: r.seq, beat: r.beat}, set: set,
		checks:  slices.Clone(t.checks.names),
		reasons: slices.Clone(t.reasons.names)}
	if r.cells.dense != nil {
		// One copy of memory: at a million cells the loop below took over a second at load.
		p.dense = slices.Clone(r.cells.dense)
		return p
	}
	p.cells = make([]numberedCell, 0, r.cells.len())
	for i, c := range r.cells.all {
		if c.seq <= r.seq {
			p.cells = append(p.cells, numberedCell{i: i, c: c})
		}
	}
	return p
}

// number lists the numbers of a dense copy's cells up to the row's sequence, once.
func (p *pagedRow) number() {
	if p.listed {
		return
	}
	p.listed = true
	n := 0
	for _, c := range p.dense {
		if c.held && c.seq <= p.h.seq {
			n++
		}
	}
	p.held = make([]uint32, 0, n)
	for i, c := range p.dense {
		if c.held && c.seq <= p.h.seq {
			p.held = append(p.held, uint32(i))
		}
	}
}

// encode returns the row as pages of at most limit bytes, or as one whole row when a single
// page holds it (as an answer was before pages); neither when it needs more than maxRowPages
// pages.
func (p *pagedRow) encode(limit int) (*fullRow, [][]byte) {
	pages := encodePages(p.h, p.set, limit, p)
	if len(pages) != 1 {
		return nil, pages
	}
	return p.whole(), nil
}

// whole returns the row as one whole row, its entries sorted by check.
func (p *pagedRow) whole() *fullRow {
	f := &fullRow{header: p.h, entries: make([]rowEntry, p.len())}
	for k := range f.entries {
		f.entries[k] = p.at(k)
	}
	sort.Slice(f.entries, func(i, j int) bool { return f.entries[i].check < f.entries[j].check })
	return f
}

// messages yields the row as encode does, in messages of version v, each encoded when the
// one before it is sent: an answer holds one page at a time besides the row copied. A row
// of more than maxRowPages pages yields its first pages only, which the asker drops
// unfinished after pageIdle (at pageSize such a row holds tens of millions of checks).
func (p *pagedRow) messages(v byte, limit int) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for from, index := 0, 0; index < maxRowPages && (index == 0 || from < p.len()); index++ {
			page, next := nextPage(p.h, p.set, index, p, from, limit)
			if index == 0 && next == p.len() {
				yield(encodeRows(v, []*fullRow{p.whole()}, nil))
				return
			}
			if !yield(page) {
				return
			}
			from = next
		}
	}
}

// answerOne returns what this table answers to one ask of version v, with messages of at most
// limit bytes: the changes since what the asker holds (sync.go), when they fit; else the whole
// row, in one message when it fits, or in pages (version 2 only: a node of version 1 reads
// none; its answer may be up to MaxMessageSize); nothing when the table holds no complete row,
// or an older one than the asker. Pages are numbered as answer set.
func (t *Table) answerOne(a ask, v byte, limit int, set uint64) (*fullRow, *sinceRow, [][]byte) {
	fr, sr, p := t.answerPlan(a, v, limit, set)
	if p == nil {
		return fr, sr, nil
	}
	fr, pages := p.encode(limit)
	return fr, nil, pages
}

// answerPlan is answerOne without the encoding of pages: a row larger than a page comes back
// copied, for the caller to encode (pagedRow.encode) after it releases the table.
func (t *Table) answerPlan(a ask, v byte, limit int, set uint64) (*fullRow, *sinceRow, *pagedRow) {
	whole, sr := t.answerKind(a, v, limit)
	switch {
	case sr != nil && len(appendSince(nil, sr)) <= limit:
		return nil, sr, nil
	case sr == nil && !whole:
		return nil, nil, nil
	case v == wireV1:
		return t.fullRow(a.checker), nil, nil
	}
	r := t.rows[a.checker]
	if r.cells.len()*maxEntrySize+maxPagePrefix <= limit {
		return t.fullRow(a.checker), nil, nil // surely one page: a whole row, as before pages
	}
	return nil, nil, t.copyRow(a.checker, set)
}
