package gossip

import "sort"

// ownRow is a checker's own row: the one place its reports are written. Every change takes
// the next sequence number; a heartbeat advances the beat only.
type ownRow struct {
	id    string
	gen   uint64
	seq   uint64
	beat  uint64
	cells map[string]cell
}

func newOwnRow(id string, gen uint64) *ownRow {
	return &ownRow{id: id, gen: gen, cells: map[string]cell{}}
}

func (o *ownRow) header() header {
	return header{checker: o.id, gen: o.gen, seq: o.seq, beat: o.beat}
}

// set records e as the report for check; an unchanged report is no change.
func (o *ownRow) set(check string, e Entry) (delta, bool) {
	e.Reason = clampReason(e.Reason)
	if c, ok := o.cells[check]; ok && c.entry == e {
		return delta{}, false
	}
	o.seq++
	o.cells[check] = cell{seq: o.seq, entry: e}
	return delta{header: o.header(), op: opSet, check: check, entry: e}, true
}

// withdraw removes the report for check.
func (o *ownRow) withdraw(check string) (delta, bool) {
	if _, ok := o.cells[check]; !ok {
		return delta{}, false
	}
	o.seq++
	delete(o.cells, check)
	return delta{header: o.header(), op: opWithdraw, check: check}, true
}

// withdrawAll removes every report.
func (o *ownRow) withdrawAll() (delta, bool) {
	if len(o.cells) == 0 {
		return delta{}, false
	}
	o.seq++
	clear(o.cells)
	return delta{header: o.header(), op: opWithdrawAll}, true
}

// heartbeat advances the beat.
func (o *ownRow) heartbeat() header {
	o.beat++
	return o.header()
}

// full returns the whole row.
func (o *ownRow) full() *fullRow {
	f := &fullRow{header: o.header(), entries: make([]rowEntry, 0, len(o.cells))}
	for check, c := range o.cells {
		f.entries = append(f.entries, rowEntry{check: check, seq: c.seq, entry: c.entry})
	}
	sort.Slice(f.entries, func(i, j int) bool { return f.entries[i].check < f.entries[j].check })
	return f
}
