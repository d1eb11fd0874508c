package gossip

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
)

// typicalEntry is a report as checkers publish them.
var typicalEntry = Entry{Status: checker.StatusHealthy, Consecutive: 3, Latency: 12345 * time.Microsecond, Reason: "http 200"}

// BenchmarkDeltaSize reports the encoded size of one report delta with typical ids.
func BenchmarkDeltaSize(b *testing.B) {
	d := delta{header: header{checker: "eu-west-c17", gen: uint64(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixNano()),
		seq: 123456, beat: 98765}, op: opSet, check: "check-004711", entry: typicalEntry}
	var n int
	for b.Loop() {
		n = len(encodeDelta(d))
	}
	b.ReportMetric(float64(n), "bytes/delta")
	b.ReportMetric(float64(len(encodeHeartbeat(d.header))), "bytes/heartbeat")
}

// BenchmarkStateSize reports the push/pull state of a checker that reports on 1,000 to
// 100,000 checks, with a digest of 200 rows (a fleet of 2 checkers in each of 3 regions,
// each probing every check, and more): its size in bytes and per check, in wire version 2
// (the own row's header: the same at every size) and, for comparison, in version 1 (the
// whole own row).
func BenchmarkStateSize(b *testing.B) {
	gen := uint64(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixNano())
	var digest []header
	for i := range 200 {
		digest = append(digest, header{checker: fmt.Sprintf("eu-west-c%03d", i), gen: gen, seq: 150000, beat: 40000})
	}
	for _, checks := range []int{1000, 10000, 100000} {
		own := newOwnRow("eu-west-c17", gen)
		for i := range checks {
			own.set(fmt.Sprintf("check-%06d", i), typicalEntry)
		}
		h := own.header()
		empty := newOwnRow(own.id, gen).full()
		for _, v := range []byte{wireV2, wireV1} {
			b.Run(fmt.Sprintf("checks=%d/v%d", checks, v), func(b *testing.B) {
				s := state{from: own.id, own: &h, row: own.full(), digest: digest}
				var n int
				for b.Loop() {
					n = len(encodeState(s, v))
				}
				b.ReportMetric(float64(n), "bytes/state")
				without := len(encodeState(state{from: own.id, own: &h, row: empty}, v))
				b.ReportMetric(float64(len(encodeState(state{from: own.id, own: &h, row: s.row}, v))-without)/float64(checks), "bytes/check")
			})
		}
	}
}

// BenchmarkApplyDelta measures merging one delta into a location's table of 1,000 checkers.
func BenchmarkApplyDelta(b *testing.B) {
	tb := NewTable(2000)
	now := time.Now()
	for i := range 1000 {
		tb.applyDelta(delta{header: header{checker: fmt.Sprintf("c%04d", i), gen: 1, seq: 1, beat: 1}, op: opSet, check: "api", entry: typicalEntry}, now)
	}
	seq := uint64(1)
	for b.Loop() {
		seq++
		tb.applyDelta(delta{header: header{checker: "c0500", gen: 1, seq: seq, beat: seq}, op: opSet, check: "api", entry: typicalEntry}, now)
	}
}

// BenchmarkDecodeDelta measures decoding one delta from the wire.
func BenchmarkDecodeDelta(b *testing.B) {
	msg := encodeDelta(delta{header: header{checker: "eu-west-c17", gen: 1, seq: 2, beat: 3}, op: opSet, check: "check-004711", entry: typicalEntry})
	for b.Loop() {
		if _, err := decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}
