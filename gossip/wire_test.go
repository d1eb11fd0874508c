package gossip

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// worstDelta is the largest delta a checker can publish: longest ids and reason.
func worstDelta() delta {
	id := strings.Repeat("x", MaxIDLen)
	return delta{header: header{checker: id, gen: 1<<64 - 1, seq: 1<<64 - 1, beat: 1<<64 - 1}, op: opSet,
		check: id, entry: Entry{Status: StatusUnhealthy, Consecutive: 1<<32 - 1, Latency: 24 * time.Hour,
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
		{check: "api", seq: 41, entry: Entry{Status: StatusHealthy, Consecutive: 3, Latency: 1500 * time.Microsecond, Reason: "http 200"}},
		{check: "db", seq: 42, entry: Entry{Status: StatusUnhealthy, Reason: "dial tcp: connection refused"}}}}
	return []message{
		{kind: kindDelta, delta: delta{header: h, op: opSet, check: "api", entry: Entry{Status: StatusHealthy, Consecutive: 3, Latency: time.Millisecond, Reason: "ok"}}},
		{kind: kindDelta, delta: delta{header: h, op: opWithdraw, check: "api"}},
		{kind: kindDelta, delta: delta{header: h, op: opWithdrawAll}},
		{kind: kindHeartbeat, header: h},
		{kind: kindRequest, request: request{from: "us-l0", addr: "10.1.0.1:7946", checkers: []string{"a", "b"}}},
		{kind: kindRows, rows: []*fullRow{row}},
		{kind: kindState, state: state{from: "eu-c1", own: row, digest: []header{h}}},
		{kind: kindState, state: state{from: "us-l0", digest: []header{}}},
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

// encodeMessage encodes any message by its kind.
func encodeMessage(m message) []byte {
	switch m.kind {
	case kindDelta:
		return encodeDelta(m.delta)
	case kindHeartbeat:
		return encodeHeartbeat(m.header)
	case kindRequest:
		return encodeRequest(m.request)
	case kindRows:
		return encodeRows(m.rows)
	case kindState:
		return encodeState(m.state)
	}
	return nil
}

// normal makes empty and nil slices equal for comparison.
func normal(m message) message {
	if len(m.request.checkers) == 0 {
		m.request.checkers = nil
	}
	if len(m.rows) == 0 {
		m.rows = nil
	}
	if len(m.state.digest) == 0 {
		m.state.digest = nil
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
