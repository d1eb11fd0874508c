package gossip

import "encoding/binary"

// The bulk kinds (row request, rows, push/pull state) in both wire versions (wire.go).

// Smallest encodings, for checking counts against the bytes left: a header is an id of at
// least one byte and three varints; a row entry a check id, a seq and an entry of four bytes.
const (
	minHeader    = 5
	minAskV2     = 4
	minRowEntry  = 7
	minWithdrawn = 3
	minFullRow   = minHeader + 1
	minSinceRow  = minHeader + 4
)

// encodeRequest encodes a request in version v: version 1 names the checkers only.
func encodeRequest(q request, v byte) []byte {
	b := appendString([]byte{v, byte(kindRequest)}, q.from)
	b = appendString(b, q.addr)
	b = binary.AppendUvarint(b, uint64(len(q.asks)))
	for _, a := range q.asks {
		b = appendString(b, a.checker)
		if v == wireV2 {
			b = binary.AppendUvarint(b, a.gen)
			b = binary.AppendUvarint(b, a.seq)
		}
	}
	return b
}

// encodeRows encodes an answer in version v: whole rows, then (version 2 only) changes since.
func encodeRows(v byte, rows []*fullRow, since []*sinceRow) []byte {
	b := binary.AppendUvarint([]byte{v, byte(kindRows)}, uint64(len(rows)))
	for _, r := range rows {
		b = appendRow(b, r)
	}
	if v == wireV2 {
		b = binary.AppendUvarint(b, uint64(len(since)))
		for _, s := range since {
			b = appendSince(b, s)
		}
	}
	return b
}

func appendSince(b []byte, s *sinceRow) []byte {
	b = appendHeader(b, s.header)
	b = binary.AppendUvarint(b, s.since)
	b = binary.AppendUvarint(b, s.wall)
	b = binary.AppendUvarint(b, uint64(len(s.entries)))
	for _, e := range s.entries {
		b = appendString(b, e.check)
		b = binary.AppendUvarint(b, e.seq)
		b = appendEntry(b, e.entry)
	}
	b = binary.AppendUvarint(b, uint64(len(s.withdrawn)))
	for _, w := range s.withdrawn {
		b = appendString(b, w.check)
		b = binary.AppendUvarint(b, w.seq)
	}
	return b
}

// encodeState encodes push/pull state in version v: version 2 carries the own row's header,
// version 1 the whole own row.
func encodeState(s state, v byte) []byte {
	b := appendString([]byte{v, byte(kindState)}, s.from)
	switch {
	case v == wireV2 && s.own != nil:
		b = appendHeader(append(b, 1), *s.own)
	case v == wireV1 && s.row != nil:
		b = appendRow(append(b, 1), s.row)
	default:
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(s.digest)))
	for _, h := range s.digest {
		b = appendHeader(b, h)
	}
	return b
}

// bulkV1 reads a request, rows or state of version 1.
func (r *reader) bulkV1(m *message) {
	switch m.kind {
	case kindRequest:
		m.request.from = r.id()
		m.request.addr = r.str(maxAddrLen)
		n := r.count(2)
		m.request.asks = make([]ask, 0, n)
		for range n {
			m.request.asks = append(m.request.asks, ask{checker: r.id()})
		}
	case kindRows:
		m.rows = r.rows()
	case kindState:
		m.state.from = r.id()
		switch r.byte() {
		case 0:
		case 1:
			m.state.row = r.row()
		default:
			r.fail()
		}
		m.state.digest = r.digest()
	}
}

// bulkV2 reads a request, rows or state of version 2.
func (r *reader) bulkV2(m *message) {
	switch m.kind {
	case kindRequest:
		m.request.from = r.id()
		m.request.addr = r.str(maxAddrLen)
		n := r.count(minAskV2)
		m.request.asks = make([]ask, 0, n)
		for range n {
			m.request.asks = append(m.request.asks, ask{checker: r.id(), gen: r.uvarint(), seq: r.uvarint()})
		}
	case kindRows:
		m.rows = r.rows()
		n := r.count(minSinceRow)
		m.since = make([]*sinceRow, 0, n)
		for range n {
			m.since = append(m.since, r.sinceRow())
		}
	case kindPage:
		m.page = r.page()
	case kindState:
		m.state.from = r.id()
		switch r.byte() {
		case 0:
		case 1:
			h := r.header()
			m.state.own = &h
		default:
			r.fail()
		}
		m.state.digest = r.digest()
	}
}

func (r *reader) rows() []*fullRow {
	n := r.count(minFullRow)
	rows := make([]*fullRow, 0, n)
	for range n {
		rows = append(rows, r.row())
	}
	return rows
}

func (r *reader) digest() []header {
	n := r.count(minHeader)
	hs := make([]header, 0, n)
	for range n {
		hs = append(hs, r.header())
	}
	return hs
}

// sinceRow reads changes since a sequence; every change must lie after since and at most at
// the row's sequence.
func (r *reader) sinceRow() *sinceRow {
	s := &sinceRow{header: r.header(), since: r.uvarint(), wall: r.uvarint()}
	if s.since > s.seq || s.wall != 0 && (s.wall <= s.since || s.wall > s.seq) {
		r.fail()
	}
	in := func(seq uint64) bool { return seq > s.since && seq <= s.seq }
	n := r.count(minRowEntry)
	s.entries = make([]rowEntry, 0, n)
	for range n {
		e := rowEntry{check: r.id(), seq: r.uvarint()}
		e.entry = r.entry()
		if !in(e.seq) {
			r.fail()
		}
		s.entries = append(s.entries, e)
	}
	n = r.count(minWithdrawn)
	s.withdrawn = make([]withdrawn, 0, n)
	for range n {
		w := withdrawn{check: r.id(), seq: r.uvarint()}
		if !in(w.seq) {
			r.fail()
		}
		s.withdrawn = append(s.withdrawn, w)
	}
	return s
}
