package gossip

import (
	"encoding/binary"
)

// Pages: a whole row split into messages of at most a page limit each (pages.go). A page is
// the row's header, the answer it belongs to, its number, whether it is the last, and its
// entries, as a whole row's:
//
//	header, set (uvarint), index (uvarint), last (0 or 1), count (uvarint),
//	count × (check, seq, entry)
//
// Cells are paged in the answerer's order, which differs from answer to answer, so pages of
// two answers never mix, even of one version of the row: set tells them apart.

// Bounds of pages.
const (
	// maxRowPages bounds the pages of one row: at pageSize, rows of up to 1 GiB.
	maxRowPages = 512
	// maxEntrySize bounds one encoded entry (longest check id and reason, largest varints).
	maxEntrySize = 2 + MaxIDLen + 10 + 1 + 5 + 10 + 2 + MaxReasonLen
	// maxPagePrefix bounds what precedes a page's entries.
	maxPagePrefix = 2 + 2 + MaxIDLen + 3*10 + 10 + 10 + 1 + 10
)

// entryList is a row's entries, by position.
type entryList interface {
	len() int
	at(k int) rowEntry
}

// encodePages encodes the entries of the row at h as pages of at most limit bytes each (at
// least one page, the last marked), or nil when they need more than maxRowPages pages.
func encodePages(h header, set uint64, limit int, es entryList) [][]byte {
	var pages [][]byte
	for from := 0; from == 0 || from < es.len(); {
		if len(pages) == maxRowPages {
			return nil
		}
		page, next := nextPage(h, set, len(pages), es, from, limit)
		pages = append(pages, page)
		from = next
	}
	return pages
}

// nextPage encodes page index of the row at h with as many of the entries from from on as fit
// in limit bytes (at least one), marked last when it holds the rest, and returns it and where
// the next page starts. Pages are encoded one at a time, so that an answer holds one page
// encoded, not the row.
func nextPage(h header, set uint64, index int, es entryList, from, limit int) ([]byte, int) {
	limit = max(limit, maxPagePrefix+maxEntrySize)
	// The entries go after room for the prefix, which is written once their count is known.
	buf := make([]byte, maxPagePrefix, min(limit, maxPagePrefix+(es.len()-from)*maxEntrySize))
	k := from
	for k < es.len() && (k == from || len(buf)+maxEntrySize <= limit) {
		buf = appendRowEntry(buf, es.at(k))
		k++
	}
	prefix := appendHeader(append(make([]byte, 0, maxPagePrefix), wireV2, byte(kindPage)), h)
	prefix = binary.AppendUvarint(prefix, set)
	prefix = binary.AppendUvarint(prefix, uint64(index))
	if k == es.len() {
		prefix = append(prefix, 1)
	} else {
		prefix = append(prefix, 0)
	}
	prefix = binary.AppendUvarint(prefix, uint64(k-from))
	start := maxPagePrefix - len(prefix)
	copy(buf[start:], prefix)
	return buf[start:], k
}

// encodePage encodes one page as it is (for tests and fuzz seeds).
func encodePage(p *rowPage) []byte {
	b := appendHeader([]byte{wireV2, byte(kindPage)}, p.header)
	b = binary.AppendUvarint(b, p.set)
	b = binary.AppendUvarint(b, uint64(p.index))
	if p.last {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(p.entries)))
	for _, e := range p.entries {
		b = appendRowEntry(b, e)
	}
	return b
}

func appendRowEntry(b []byte, e rowEntry) []byte {
	b = appendString(b, e.check)
	b = binary.AppendUvarint(b, e.seq)
	return appendEntry(b, e.entry)
}

// page reads one page; its number must be under maxRowPages and every entry at most at the
// row's sequence.
func (r *reader) page() *rowPage {
	p := &rowPage{header: r.header(), set: r.uvarint()}
	i := r.uvarint()
	if i >= maxRowPages {
		r.fail()
	}
	p.index = uint32(i)
	switch r.byte() {
	case 0:
	case 1:
		p.last = true
	default:
		r.fail()
	}
	n := r.count(minRowEntry)
	p.entries = make([]rowEntry, 0, n)
	for range n {
		e := rowEntry{check: r.id(), seq: r.uvarint()}
		e.entry = r.entry()
		if e.seq > p.seq {
			r.fail()
		}
		p.entries = append(p.entries, e)
	}
	return p
}
