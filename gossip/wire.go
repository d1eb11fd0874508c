package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/vigil-dns/vigil/checker"
)

// The wire format: a version byte, a kind byte, then the kind's fields as unsigned varints
// and length-prefixed strings. Decoding never trusts a count: every count is checked against
// the bytes left before anything is allocated.
//
// Two versions are in use (pages are an addition to version 2, below). Version 1 ships whole
// rows: a push/pull carries the sender's whole own row and a row request is answered with
// whole rows.
// Version 2 changes only the bulk kinds (row request, rows, state): a push/pull carries row
// headers only, a request says what the asker holds, and an answer carries the changes since
// then when the answerer can prove it has them all (sync.go). Deltas and heartbeats are the
// same in both versions and are always sent as version 1, so that every node reads them.
// A node reads both versions and answers a version-1 request in version 1; a node of
// version 1 refuses version 2 as an unknown version (dropped, counted by reason).
//
// A whole row too large for one message travels as pages (kind page, version 2 only; pages.go).
// Nodes of version 2 from before pages read no page (an unknown kind: dropped as malformed), so
// they miss only rows that need pages, which they could not get at all when over
// MaxMessageSize; an asker of version 1 is never sent pages.

// The wire versions.
const (
	// wireV1 is the version of deltas and heartbeats, and of the bulk kinds that ship whole
	// rows.
	wireV1 = 1
	// wireV2 is the version of the bulk kinds that ship only what differs.
	wireV2 = 2
)

// MaxMessageSize bounds a message that travels over a stream (row repairs, push/pull state):
// under memberlist's 20 MB cap on push/pull state.
const MaxMessageSize = 16 << 20

// kind is the type of a gossip message.
type kind uint8

const (
	kindDelta     kind = 1 // one change of a row: set or withdraw one check, or withdraw all
	kindHeartbeat kind = 2 // a row's header only: progress without change
	kindRequest   kind = 3 // a node asks for rows (version 2: saying what it holds of each)
	kindRows      kind = 4 // rows, the answer to a request (version 2: or changes since)
	kindState     kind = 5 // push/pull: the sender's own row (version 2: its header) and a digest
	kindPage      kind = 6 // version 2 only: one page of a whole row too large for one message
	kindEnd       kind = 7
)

// kindNames name the kinds in metrics.
var kindNames = [...]string{"invalid", "delta", "heartbeat", "row_request", "rows", "state", "page"}

// String names the kind for metrics.
func (k kind) String() string {
	if k < kindEnd {
		return kindNames[k]
	}
	return "invalid"
}

// bulk reports whether the kind exists in version 2.
func (k kind) bulk() bool {
	return k == kindRequest || k == kindRows || k == kindState || k == kindPage
}

// op is what a delta does to its row.
type op uint8

const (
	opSet         op = 1
	opWithdraw    op = 2
	opWithdrawAll op = 3
)

// header identifies a version of one checker's row. Rows compare by (gen, seq); beat
// advances with every heartbeat of the generation.
type header struct {
	checker string
	gen     uint64
	seq     uint64
	beat    uint64
}

// delta is one change of a row.
type delta struct {
	header
	op    op
	check string
	entry Entry
}

// rowEntry is one entry of a whole row, with the sequence of its last change.
type rowEntry struct {
	check string
	seq   uint64
	entry Entry
}

// fullRow is a whole row as one checker wrote it up to header.seq.
type fullRow struct {
	header
	entries []rowEntry
}

// withdrawn is one withdrawal of a check from a row, at seq.
type withdrawn struct {
	check string
	seq   uint64
}

// sinceRow is what changed in a row after since, up to header.seq: every cell set after
// since, every withdrawal after since, and the latest withdraw-all after since (wall, 0 for
// none), which removed every cell older than itself. Only a row that can prove it holds every
// change of that span is sent so (sync.go).
type sinceRow struct {
	header
	since     uint64
	wall      uint64
	entries   []rowEntry
	withdrawn []withdrawn
}

// rowPage is one page of a whole row at header: the row's cells split into pages, numbered
// from 0, the last one marked, all of one answer (set) (pages.go). Only a complete set counts.
type rowPage struct {
	header
	set     uint64
	index   uint32
	last    bool
	entries []rowEntry
}

// maxAddrLen bounds the gossip address a request carries: a host name or IP and a port.
const maxAddrLen = 300

// ask is one row a request asks for, with the generation and sequence the asker holds of it
// (0 and 0 when it holds nothing, and always in version 1, which asks for whole rows).
type ask struct {
	checker string
	gen     uint64
	seq     uint64
}

// request asks for the rows of the named checkers. addr is the asker's gossip address,
// host:port, so that a peer that does not know the asker as a member yet can still answer.
type request struct {
	from string
	addr string
	asks []ask
}

// state is what a node sends in a push/pull: in version 2 the header of its own row if it is
// a checker (own), in version 1 the whole row (row); and the header of every row it holds.
type state struct {
	from   string
	own    *header
	row    *fullRow
	digest []header
}

// Errors of decoding; a message that fails is dropped and counted by reason.
var (
	errMalformed = errors.New("malformed")
	errOversized = errors.New("oversized")
	errVersion   = errors.New("unknown version")
)

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHeader(b []byte, h header) []byte {
	b = appendString(b, h.checker)
	b = binary.AppendUvarint(b, h.gen)
	b = binary.AppendUvarint(b, h.seq)
	return binary.AppendUvarint(b, h.beat)
}

func appendEntry(b []byte, e Entry) []byte {
	b = append(b, byte(e.Status))
	b = binary.AppendUvarint(b, uint64(e.Consecutive))
	b = binary.AppendUvarint(b, uint64(max(e.Latency, 0)/time.Microsecond))
	return appendString(b, clampReason(e.Reason))
}

func appendRow(b []byte, r *fullRow) []byte {
	b = appendHeader(b, r.header)
	b = binary.AppendUvarint(b, uint64(len(r.entries)))
	for _, e := range r.entries {
		b = appendString(b, e.check)
		b = binary.AppendUvarint(b, e.seq)
		b = appendEntry(b, e.entry)
	}
	return b
}

func encodeDelta(d delta) []byte {
	b := []byte{wireV1, byte(kindDelta)}
	b = appendHeader(b, d.header)
	b = append(b, byte(d.op))
	if d.op != opWithdrawAll {
		b = appendString(b, d.check)
	}
	if d.op == opSet {
		b = appendEntry(b, d.entry)
	}
	return b
}

func encodeHeartbeat(h header) []byte {
	return appendHeader([]byte{wireV1, byte(kindHeartbeat)}, h)
}

// message is any decoded message; the fields of its kind and version are set.
type message struct {
	version byte
	kind    kind
	delta   delta
	header  header
	request request
	rows    []*fullRow
	since   []*sinceRow // version 2 rows only
	state   state
	page    *rowPage // version 2 only
}

// maxSize returns the largest message of a kind that is accepted.
func maxSize(k kind) int {
	if k == kindDelta || k == kindHeartbeat {
		return MaxDeltaSize
	}
	return MaxMessageSize
}

// peekKind returns the kind a message claims, or kind 0 when it cannot tell.
func peekKind(b []byte) kind {
	if len(b) < 2 || kind(b[1]) == 0 || kind(b[1]) >= kindEnd {
		return 0
	}
	if k := kind(b[1]); b[0] == wireV1 || b[0] == wireV2 && k.bulk() {
		return k
	}
	return 0
}

// decode parses one message of either version. It never panics and never allocates more
// than the input justifies.
func decode(b []byte) (message, error) {
	if len(b) < 2 {
		return message{}, fmt.Errorf("gossip: %d-byte message: %w", len(b), errMalformed)
	}
	if b[0] != wireV1 && b[0] != wireV2 {
		return message{}, fmt.Errorf("gossip: version %d: %w", b[0], errVersion)
	}
	m := message{version: b[0], kind: kind(b[1])}
	if m.kind == 0 || m.kind >= kindEnd || m.version == wireV2 && !m.kind.bulk() || m.version == wireV1 && m.kind == kindPage {
		return message{}, fmt.Errorf("gossip: kind %d of version %d: %w", b[1], b[0], errMalformed)
	}
	if len(b) > maxSize(m.kind) {
		return message{}, fmt.Errorf("gossip: %s of %d bytes: %w", m.kind, len(b), errOversized)
	}
	r := &reader{b: b[2:]}
	switch {
	case m.kind == kindDelta:
		m.delta = r.delta()
	case m.kind == kindHeartbeat:
		m.header = r.header()
	case m.version == wireV1:
		r.bulkV1(&m)
	default:
		r.bulkV2(&m)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	if r.err != nil {
		return message{}, fmt.Errorf("gossip: %s version %d: %w", m.kind, m.version, r.err)
	}
	return m, nil
}

// reader consumes a message; its first error sticks and every later read returns zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errMalformed
	}
	r.b = nil
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// count reads a count of items that take at least minSize bytes each.
func (r *reader) count(minSize int) int {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)/minSize) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *reader) str(limit int) string { return r.strIn(limit, nil) }

// strIn reads a string as str does, returning in's copy of it when in holds it, so that
// decoding a string the table holds already allocates nothing (in may be nil).
func (r *reader) strIn(limit int, in *interned) string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) || n > uint64(limit) {
		r.fail()
		return ""
	}
	b := r.b[:n]
	r.b = r.b[n:]
	if in != nil {
		if i, ok := in.lookup(string(b)); ok {
			return in.name(i)
		}
	}
	if !utf8.Valid(b) {
		r.fail()
		return ""
	}
	return string(b)
}

func (r *reader) id() string { return r.idIn(nil) }

// idIn reads a check or node id, in's copy of it when in holds it.
func (r *reader) idIn(in *interned) string {
	s := r.strIn(MaxIDLen, in)
	if s == "" {
		r.fail()
	}
	return s
}

func (r *reader) header() header {
	return header{checker: r.id(), gen: r.uvarint(), seq: r.uvarint(), beat: r.uvarint()}
}

func (r *reader) entry() Entry { return r.entryIn(nil) }

// entryIn reads an entry, its reason in's copy when in holds it.
func (r *reader) entryIn(reasons *interned) Entry {
	var e Entry
	s := r.byte()
	if checker.Status(s) >= statusEnd {
		r.fail()
	}
	e.Status = checker.Status(s)
	c := r.uvarint()
	if c > 1<<32-1 {
		r.fail()
	}
	e.Consecutive = uint32(c)
	us := r.uvarint()
	if us > uint64(24*time.Hour/time.Microsecond) {
		r.fail()
	}
	e.Latency = time.Duration(us) * time.Microsecond
	e.Reason = r.strIn(MaxReasonLen, reasons)
	return e
}

func (r *reader) delta() delta {
	d := delta{header: r.header(), op: op(r.byte())}
	switch d.op {
	case opSet:
		d.check = r.id()
		d.entry = r.entry()
	case opWithdraw:
		d.check = r.id()
	case opWithdrawAll:
	default:
		r.fail()
	}
	if d.seq == 0 {
		r.fail()
	}
	return d
}

func (r *reader) row() *fullRow {
	row := &fullRow{header: r.header()}
	n := r.count(5)
	row.entries = make([]rowEntry, 0, n)
	for range n {
		e := rowEntry{check: r.id(), seq: r.uvarint()}
		e.entry = r.entry()
		if e.seq > row.seq {
			r.fail()
		}
		row.entries = append(row.entries, e)
	}
	return row
}
