package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// The wire format: a version byte, a kind byte, then the kind's fields as unsigned varints
// and length-prefixed strings. Decoding never trusts a count: every count is checked against
// the bytes left before anything is allocated.

// wireVersion is the version byte every message starts with.
const wireVersion = 1

// MaxMessageSize bounds a message that travels over a stream (row repairs, push/pull state):
// under memberlist's 20 MB cap on push/pull state.
const MaxMessageSize = 16 << 20

// kind is the type of a gossip message.
type kind uint8

const (
	kindDelta     kind = 1 // one change of a row: set or withdraw one check, or withdraw all
	kindHeartbeat kind = 2 // a row's header only: progress without change
	kindRequest   kind = 3 // a node asks for whole rows
	kindRows      kind = 4 // whole rows, the answer to a request
	kindState     kind = 5 // push/pull: the sender's own row and a digest of every row
	kindEnd       kind = 6
)

// kindNames name the kinds in metrics.
var kindNames = [...]string{"invalid", "delta", "heartbeat", "row_request", "rows", "state"}

// String names the kind for metrics.
func (k kind) String() string {
	if k < kindEnd {
		return kindNames[k]
	}
	return "invalid"
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

// maxAddrLen bounds the gossip address a request carries: a host name or IP and a port.
const maxAddrLen = 300

// request asks for the whole rows of the named checkers. addr is the asker's gossip address,
// host:port, so that a peer that does not know the asker as a member yet can still answer.
type request struct {
	from     string
	addr     string
	checkers []string
}

// state is what a node sends in a push/pull: its own row if it is a checker, and the header
// of every row it holds.
type state struct {
	from   string
	own    *fullRow
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
	b := []byte{wireVersion, byte(kindDelta)}
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
	return appendHeader([]byte{wireVersion, byte(kindHeartbeat)}, h)
}

func encodeRequest(r request) []byte {
	b := appendString([]byte{wireVersion, byte(kindRequest)}, r.from)
	b = appendString(b, r.addr)
	b = binary.AppendUvarint(b, uint64(len(r.checkers)))
	for _, c := range r.checkers {
		b = appendString(b, c)
	}
	return b
}

func encodeRows(rows []*fullRow) []byte {
	b := binary.AppendUvarint([]byte{wireVersion, byte(kindRows)}, uint64(len(rows)))
	for _, r := range rows {
		b = appendRow(b, r)
	}
	return b
}

func encodeState(s state) []byte {
	b := appendString([]byte{wireVersion, byte(kindState)}, s.from)
	if s.own != nil {
		b = append(b, 1)
		b = appendRow(b, s.own)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(s.digest)))
	for _, h := range s.digest {
		b = appendHeader(b, h)
	}
	return b
}

// message is any decoded message; exactly one field is set, as kind says.
type message struct {
	kind    kind
	delta   delta
	header  header
	request request
	rows    []*fullRow
	state   state
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
	if len(b) < 2 || b[0] != wireVersion || kind(b[1]) == 0 || kind(b[1]) >= kindEnd {
		return 0
	}
	return kind(b[1])
}

// decode parses one message. It never panics and never allocates more than the input
// justifies.
func decode(b []byte) (message, error) {
	if len(b) < 2 {
		return message{}, fmt.Errorf("gossip: %d-byte message: %w", len(b), errMalformed)
	}
	if b[0] != wireVersion {
		return message{}, fmt.Errorf("gossip: version %d: %w", b[0], errVersion)
	}
	m := message{kind: kind(b[1])}
	if m.kind == 0 || m.kind >= kindEnd {
		return message{}, fmt.Errorf("gossip: kind %d: %w", b[1], errMalformed)
	}
	if len(b) > maxSize(m.kind) {
		return message{}, fmt.Errorf("gossip: %s of %d bytes: %w", m.kind, len(b), errOversized)
	}
	r := &reader{b: b[2:]}
	switch m.kind {
	case kindDelta:
		m.delta = r.delta()
	case kindHeartbeat:
		m.header = r.header()
	case kindRequest:
		m.request.from = r.id()
		m.request.addr = r.str(maxAddrLen)
		n := r.count(2)
		m.request.checkers = make([]string, 0, n)
		for range n {
			m.request.checkers = append(m.request.checkers, r.id())
		}
	case kindRows:
		n := r.count(6)
		m.rows = make([]*fullRow, 0, n)
		for range n {
			m.rows = append(m.rows, r.row())
		}
	case kindState:
		m.state.from = r.id()
		switch r.byte() {
		case 0:
		case 1:
			m.state.own = r.row()
		default:
			r.fail()
		}
		n := r.count(5)
		m.state.digest = make([]header, 0, n)
		for range n {
			m.state.digest = append(m.state.digest, r.header())
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	if r.err != nil {
		return message{}, fmt.Errorf("gossip: %s: %w", m.kind, r.err)
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

func (r *reader) str(limit int) string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) || n > uint64(limit) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	if !utf8.ValidString(s) {
		r.fail()
		return ""
	}
	return s
}

func (r *reader) id() string {
	s := r.str(MaxIDLen)
	if s == "" {
		r.fail()
	}
	return s
}

func (r *reader) header() header {
	return header{checker: r.id(), gen: r.uvarint(), seq: r.uvarint(), beat: r.uvarint()}
}

func (r *reader) entry() Entry {
	var e Entry
	s := r.byte()
	if Status(s) >= statusEnd {
		r.fail()
	}
	e.Status = Status(s)
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
	e.Reason = r.str(MaxReasonLen)
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
