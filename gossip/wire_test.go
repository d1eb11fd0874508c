package gossip

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
)

// worstDelta is the largest delta a checker can publish: longest ids and reason.
func worstDelta() delta {
	id := strings.Repeat("x", MaxIDLen)
	return delta{header: header{checker: id, gen: 1<<64 - 1, seq: 1<<64 - 1, beat: 1<<64 - 1}, op: opSet,
		check: id, entry: Entry{Status: checker.StatusUnhealthy, Consecutive: 1<<32 - 1, Latency: 24 * time.Hour,
			Reason: strings.Repeat("é", MaxReasonLen)}}
}

// TestDeltaFitsOnePacket: the largest possible delta fits one UDP packet with room to spare.
func TestDeltaFitsOnePacket(t *testing.T) {
	b := encodeDelta(worstDelta())
	if len(b) > MaxDeltaSize {
		t.Fatalf("largest delta is %d bytes, more than %d", len(b), MaxDeltaSize)
	}
	if _, err := decode(b); err != nil {
		t.Fatalf("largest delta does not decode: %v", err)
	}
	t.Logf("largest delta: %d bytes", len(b))
}

// samples returns one message of every kind and op.
func samples() []message {
	h := header{checker: "eu-c1", gen: 1767225600000000000, seq: 42, beat: 7}
	row := &fullRow{header: h, entries: []rowEntry{
		{check: "api", seq: 41, entry: Entry{Status: checker.StatusHealthy, Consecutive: 3, Latency: 1500 * time.Microsecond, Reason: "http 200"}},
		{check: "db", seq: 42, entry: Entry{Status: checker.StatusUnhealthy, Reason: "dial tcp: connection refused"}}}}
	since := &sinceRow{header: header{checker: "eu-c1", gen: h.gen, seq: 50, beat: 9}, since: 42, wall: 44,
		entries:   []rowEntry{{check: "api", seq: 47, entry: Entry{Status: checker.StatusHealthy, Reason: "http 200"}}},
		withdrawn: []withdrawn{{check: "db", seq: 45}, {check: "web", seq: 50}}}
	return []message{
		{version: wireV1, kind: kindDelta, delta: delta{header: h, op: opSet, check: "api", entry: Entry{Status: checker.StatusHealthy, Consecutive: 3, Latency: time.Millisecond, Reason: "ok"}}},
		{version: wireV1, kind: kindDelta, delta: delta{header: h, op: opWithdraw, check: "api"}},
		{version: wireV1, kind: kindDelta, delta: delta{header: h, op: opWithdrawAll}},
		{version: wireV1, kind: kindHeartbeat, header: h},
		{version: wireV1, kind: kindRequest, request: request{from: "us-l0", addr: "10.1.0.1:7946", asks: []ask{{checker: "a"}, {checker: "b"}}}},
		{version: wireV1, kind: kindRows, rows: []*fullRow{row}},
		{version: wireV1, kind: kindState, state: state{from: "eu-c1", row: row, digest: []header{h}}},
		{version: wireV1, kind: kindState, state: state{from: "us-l0", digest: []header{}}},
		{version: wireV2, kind: kindRequest, request: request{from: "us-l0", addr: "10.1.0.1:7946", asks: []ask{{checker: "a"}, {checker: "b", gen: 7, seq: 3}}}},
		{version: wireV2, kind: kindRows, rows: []*fullRow{row}, since: []*sinceRow{since, {header: h, since: 42}}},
		{version: wireV2, kind: kindRows, since: []*sinceRow{since}},
		{version: wireV2, kind: kindState, state: state{from: "eu-c1", own: &h, digest: []header{h}}},
		{version: wireV2, kind: kindState, state: state{from: "us-l0", digest: []header{}}},
		{version: wireV2, kind: kindPage, page: &rowPage{header: h, index: 0, entries: row.entries}},
		{version: wireV2, kind: kindPage, page: &rowPage{header: h, index: 3, last: true, entries: row.entries[1:]}},
		{version: wireV2, kind: kindPage, page: &rowPage{header: h, index: 1}},
	}
}

// TestRoundTrip: every kind decodes to what was encoded.
func TestRoundTrip(t *testing.T) {
	for _, m := range samples() {
		b := encodeMessage(m)
		got, err := decode(b)
		if err != nil {
			t.Errorf("%s: %v", m.kind, err)
			continue
		}
		if !reflect.DeepEqual(normal(got), normal(m)) {
			t.Errorf("%s: decoded %+v, want %+v", m.kind, got, m)
		}
		for cut := range len(b) {
			if _, err := decode(b[:cut]); err == nil {
				t.Errorf("%s cut to %d of %d bytes decodes", m.kind, cut, len(b))
			}
		}
	}
}

// encodeMessage encodes any message by its kind and version.
func encodeMessage(m message) []byte {
	switch m.kind {
	case kindDelta:
		return encodeDelta(m.delta)
	case kindHeartbeat:
		return encodeHeartbeat(m.header)
	case kindRequest:
		return encodeRequest(m.request, m.version)
	case kindRows:
		return encodeRows(m.version, m.rows, m.since)
	case kindState:
		return encodeState(m.state, m.version)
	case kindPage:
		return encodePage(m.page)
	}
	return nil
}

// normal makes empty and nil slices equal for comparison.
func normal(m message) message {
	if len(m.request.asks) == 0 {
		m.request.asks = nil
	}
	if len(m.rows) == 0 {
		m.rows = nil
	}
	if len(m.since) == 0 {
		m.since = nil
	}
	for i, s := range m.since {
		c := *s
		if len(c.entries) == 0 {
			c.entries = nil
		}
		if len(c.withdrawn) == 0 {
			c.withdrawn = nil
		}
		m.since[i] = &c
	}
	for i, r := range m.rows {
		c := *r
		if len(c.entries) == 0 {
			c.entries = nil
		}
		m.rows[i] = &c
	}
	if r := m.state.row; r != nil && len(r.entries) == 0 {
		c := *r
		c.entries = nil
		m.state.row = &c
	}
	if len(m.state.digest) == 0 {
		m.state.digest = nil
	}
	if p := m.page; p != nil && len(p.entries) == 0 {
		c := *p
		c.entries = nil
		m.page = &c
	}
	return m
}

// FuzzDecode: decoding arbitrary bytes never panics, and whatever decodes encodes back to
// the same bytes. Seeds are in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(encodeDelta(worstDelta()))
	for _, m := range samples() {
		f.Add(encodeMessage(m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b)
		if err != nil {
			return
		}
		again := encodeMessage(m)
		if string(again) != string(b) {
			m2, err := decode(again)
			if err != nil || !reflect.DeepEqual(normal(m2), normal(m)) {
				t.Fatalf("re-encoding changed the message: %x -> %x (%v)", b, again, err)
			}
		}
	})
}

// TestDecodeRejectsBadSync: version 2 messages that would mislead a table, or claim more
// than their bytes hold, are refused, as is any other version.
func TestDecodeRejectsBadSync(t *testing.T) {
	h := header{checker: "c", gen: 1, seq: 10, beat: 1}
	e := Entry{Status: checker.StatusHealthy}
	emptyPage := encodePage(&rowPage{header: h})
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"version 2 delta", append([]byte{wireV2}, encodeDelta(delta{header: h, op: opWithdrawAll})[1:]...), errMalformed},
		{"version 2 heartbeat", append([]byte{wireV2}, encodeHeartbeat(h)[1:]...), errMalformed},
		{"version 3", append([]byte{3}, encodeState(state{from: "c", own: &h}, wireV2)[1:]...), errVersion},
		{"since after the row's seq", encodeRows(wireV2, nil, []*sinceRow{{header: h, since: 11}}), errMalformed},
		{"withdraw-all at since", encodeRows(wireV2, nil, []*sinceRow{{header: h, since: 4, wall: 4}}), errMalformed},
		{"withdraw-all after seq", encodeRows(wireV2, nil, []*sinceRow{{header: h, since: 4, wall: 11}}), errMalformed},
		{"cell not after since", encodeRows(wireV2, nil, []*sinceRow{{header: h, since: 4,
			entries: []rowEntry{{check: "a", seq: 4, entry: e}}}}), errMalformed},
		{"cell after seq", encodeRows(wireV2, nil, []*sinceRow{{header: h, since: 4,
			entries: []rowEntry{{check: "a", seq: 11, entry: e}}}}), errMalformed},
		{"withdrawal not after since", encodeRows(wireV2, nil, []*sinceRow{{header: h, since: 4,
			withdrawn: []withdrawn{{check: "a", seq: 3}}}}), errMalformed},
		{"withdrawal with an empty id", encodeRows(wireV2, nil, []*sinceRow{{header: h, since: 4,
			withdrawn: []withdrawn{{check: "", seq: 5}}}}), errMalformed},
		{"a million since rows in 20 bytes", []byte{wireV2, byte(kindRows), 0, 0xc0, 0x84, 0x3d, 1, 'c', 1, 1, 1, 0, 0, 0, 0}, errMalformed},
		{"a million asks in 20 bytes", append(encodeRequest(request{from: "l", addr: "x"}, wireV2)[:6], 0xc0, 0x84, 0x3d, 1, 'c', 1, 1), errMalformed},
		{"state flag 2", []byte{wireV2, byte(kindState), 1, 'c', 2, 0}, errMalformed},
		{"version 1 page", append([]byte{wireV1}, encodePage(&rowPage{header: h, last: true})[1:]...), errMalformed},
		{"page number too high", encodePage(&rowPage{header: h, index: maxRowPages}), errMalformed},
		{"page last flag 2", append(emptyPage[:len(emptyPage)-2:len(emptyPage)-2], 2, 0), errMalformed},
		{"page cell after seq", encodePage(&rowPage{header: h, entries: []rowEntry{{check: "a", seq: 11, entry: e}}}), errMalformed},
		{"a million page entries in 20 bytes", append(emptyPage[:len(emptyPage)-1:len(emptyPage)-1], 0xc0, 0x84, 0x3d, 1, 'c', 1), errMalformed},
	} {
		if _, err := decode(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
