package gossip

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vigil-dns/vigil/checker"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func set(gen, seq, beat uint64, check string, s checker.Status) delta {
	return delta{header: header{checker: "c", gen: gen, seq: seq, beat: beat}, op: opSet, check: check,
		entry: Entry{Status: s}}
}

func cells(tb *Table) map[string]checker.Status {
	out := map[string]checker.Status{}
	for k, e := range heldEntries(tb) {
		out[k[1]] = e.Status
	}
	return out
}

// heldEntries returns every cell the table holds, by checker and check.
func heldEntries(tb *Table) map[[2]string]Entry {
	out := map[[2]string]Entry{}
	for _, r := range tb.rows {
		tb.eachCell(r, func(check string, _ uint64, e Entry) { out[[2]string{r.checker, check}] = e })
	}
	return out
}

func progress(tb *Table) time.Time {
	r := tb.rows["c"]
	if r == nil {
		return time.Time{}
	}
	return r.progress
}

// TestTableMerge: the table's merge rules, step by step, with the location's clock.
func TestTableMerge(t *testing.T) {
	type step struct {
		name     string
		apply    func(tb *Table, now time.Time) outcome
		want     outcome
		cells    map[string]checker.Status
		progress int // seconds; -1 for never
	}
	H, U := checker.StatusHealthy, checker.StatusUnhealthy
	steps := []step{
		{"first delta", func(tb *Table, now time.Time) outcome { return tb.applyDelta(set(1, 1, 1, "a", H), now) },
			outcomeNew, map[string]checker.Status{"a": H}, 1},
		{"duplicate", func(tb *Table, now time.Time) outcome { return tb.applyDelta(set(1, 1, 1, "a", H), now) },
			outcomeOld, map[string]checker.Status{"a": H}, 1},
		{"heartbeat", func(tb *Table, now time.Time) outcome {
			return tb.applyHeartbeat(header{checker: "c", gen: 1, seq: 1, beat: 2}, now)
		}, outcomeNew, map[string]checker.Status{"a": H}, 3},
		{"gap: seq 3 before 2", func(tb *Table, now time.Time) outcome { return tb.applyDelta(set(1, 3, 2, "b", U), now) },
			outcomeNew, map[string]checker.Status{"a": H, "b": U}, 3},
		{"heartbeat while behind is no progress", func(tb *Table, now time.Time) outcome {
			return tb.applyHeartbeat(header{checker: "c", gen: 1, seq: 3, beat: 3}, now)
		}, outcomeNew, map[string]checker.Status{"a": H, "b": U}, 3},
		{"seq 2 fills the gap: the heartbeat's progress", func(tb *Table, now time.Time) outcome { return tb.applyDelta(set(1, 2, 2, "a", U), now) },
			outcomeNew, map[string]checker.Status{"a": U, "b": U}, 5},
		{"withdraw a: a delta of a beat heard is no progress", func(tb *Table, now time.Time) outcome {
			return tb.applyDelta(delta{header: header{checker: "c", gen: 1, seq: 4, beat: 3}, op: opWithdraw, check: "a"}, now)
		}, outcomeNew, map[string]checker.Status{"b": U}, 5},
		{"late set of a is ignored", func(tb *Table, now time.Time) outcome { return tb.applyDelta(set(1, 2, 2, "a", H), now) },
			outcomeOld, map[string]checker.Status{"b": U}, 5},
		{"withdraw all at 6 arrives before set at 5", func(tb *Table, now time.Time) outcome {
			return tb.applyDelta(delta{header: header{checker: "c", gen: 1, seq: 6, beat: 3}, op: opWithdrawAll}, now)
		}, outcomeNew, map[string]checker.Status{}, 5},
		{"set at 5 is older than the withdraw-all", func(tb *Table, now time.Time) outcome { return tb.applyDelta(set(1, 5, 3, "d", H), now) },
			outcomeNew, map[string]checker.Status{}, 5},
		{"whole row older than held is ignored", func(tb *Table, now time.Time) outcome {
			return tb.applyRow(&fullRow{header: header{checker: "c", gen: 1, seq: 5, beat: 3},
				entries: []rowEntry{{check: "x", seq: 5, entry: Entry{Status: H}}}}, now, true)
		}, outcomeOld, map[string]checker.Status{}, 5},
		{"whole newer row replaces", func(tb *Table, now time.Time) outcome {
			return tb.applyRow(&fullRow{header: header{checker: "c", gen: 1, seq: 9, beat: 5},
				entries: []rowEntry{{check: "x", seq: 8, entry: Entry{Status: H}}, {check: "y", seq: 9, entry: Entry{Status: U}}}}, now, true)
		}, outcomeNew, map[string]checker.Status{"x": H, "y": U}, 12},
		{"a newer row from a third node is no progress", func(tb *Table, now time.Time) outcome {
			return tb.applyRow(&fullRow{header: header{checker: "c", gen: 1, seq: 10, beat: 6},
				entries: []rowEntry{{check: "x", seq: 8, entry: Entry{Status: H}}, {check: "y", seq: 10, entry: Entry{Status: H}}}}, now, false)
		}, outcomeNew, map[string]checker.Status{"x": H, "y": H}, 12},
		{"restart: a newer generation voids the row", func(tb *Table, now time.Time) outcome { return tb.applyDelta(set(2, 1, 1, "z", H), now) },
			outcomeNew, map[string]checker.Status{"z": H}, 14},
		{"the old generation is ignored", func(tb *Table, now time.Time) outcome { return tb.applyDelta(set(1, 10, 9, "x", H), now) },
			outcomeOld, map[string]checker.Status{"z": H}, 14},
	}
	tb := NewTable(10)
	secs := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	for i, s := range steps {
		if got := s.apply(tb, at(secs[i])); got != s.want {
			t.Errorf("%s: outcome %v, want %v", s.name, got, s.want)
		}
		got := cells(tb)
		if len(got) != len(s.cells) {
			t.Errorf("%s: cells %v, want %v", s.name, got, s.cells)
		}
		for k, v := range s.cells {
			if got[k] != v {
				t.Errorf("%s: cells %v, want %v", s.name, got, s.cells)
				break
			}
		}
		if p := progress(tb); !p.Equal(at(s.progress)) {
			t.Errorf("%s: progress at %v, want %v", s.name, p.Sub(t0), time.Duration(s.progress)*time.Second)
		}
		if r, _ := tb.Len(); r != len(s.cells) {
			t.Errorf("%s: Len reports %d, want %d", s.name, r, len(s.cells))
		}
	}
}

// TestTableDigestAndLimits: a digest says which rows are behind and carries heartbeats; the
// table holds at most its limit of rows; forgotten rows go.
func TestTableDigestAndLimits(t *testing.T) {
	tb := NewTable(2)
	tb.applyDelta(set(1, 1, 1, "a", checker.StatusHealthy), at(0))
	if behind := tb.applyDigest([]header{{checker: "gone", gen: 1, seq: 9, beat: 9}}, at(1)); len(behind) != 0 || tb.rows["gone"] != nil {
		t.Errorf("a digest brought back an unknown row: behind %v", behind)
	}
	tb.applyHeartbeat(header{checker: "d", gen: 1, seq: 0, beat: 1}, at(0))
	behind := tb.applyDigest([]header{{checker: "c", gen: 1, seq: 1, beat: 5}, {checker: "d", gen: 1, seq: 4, beat: 1}}, at(5))
	if len(behind) != 1 || behind[0] != "d" {
		t.Errorf("behind %v, want [d]", behind)
	}
	if p := progress(tb); !p.Equal(at(0)) {
		t.Errorf("a newer beat in a digest, which may be old news, counted as progress at %v", p.Sub(t0))
	}
	if tb.applyHeartbeat(header{checker: "c", gen: 1, seq: 1, beat: 5}, at(6)) != outcomeOld || !progress(tb).Equal(at(0)) {
		t.Errorf("the digest's beat, relayed again, counted as progress")
	}
	if o := tb.applyDelta(delta{header: header{checker: "e", gen: 1, seq: 1, beat: 1}, op: opWithdrawAll}, at(6)); o != outcomeFull {
		t.Errorf("third row in a table of two: %v", o)
	}
	if f := tb.fullRow("c"); f == nil || f.seq != 1 || len(f.entries) != 1 {
		t.Errorf("fullRow: %+v", f)
	}
	if n := tb.forget(at(6), func(id string) bool { return id == "d" }); n != 1 {
		t.Errorf("forgot %d rows, want 1 (c, unchanged since 5; d is kept)", n)
	}
	if r, c := tb.Len(); r != 0 || c != 1 {
		t.Errorf("after forget: %d reports, %d rows", r, c)
	}
}

// TestOwnRow: a checker's own row numbers every change and nothing else.
func TestOwnRow(t *testing.T) {
	o := newOwnRow("c", 7)
	if _, ok := o.withdraw("a"); ok {
		t.Error("withdrawing a report never set")
	}
	d, ok := o.set("a", Entry{Status: checker.StatusHealthy})
	if !ok || d.seq != 1 || d.gen != 7 {
		t.Errorf("first set: %+v %v", d, ok)
	}
	if _, ok := o.set("a", Entry{Status: checker.StatusHealthy}); ok {
		t.Error("an unchanged report took a sequence number")
	}
	if h := o.heartbeat(); h.seq != 1 || h.beat != 1 {
		t.Errorf("heartbeat: %+v", h)
	}
	long := Entry{Status: checker.StatusUnhealthy, Reason: string(make([]byte, 1000))}
	if d, _ := o.set("a", long); len(d.entry.Reason) != MaxReasonLen {
		t.Errorf("reason not clamped: %d bytes", len(d.entry.Reason))
	}
	if d, ok := o.withdrawAll(); !ok || d.seq != 3 || len(o.full().entries) != 0 {
		t.Errorf("withdraw all: %+v", d)
	}
}

// TestClampReason: a reason longer than MaxReasonLen keeps its first MaxReasonLen bytes, less
// a rune the cut split and any bytes that are not UTF-8.
func TestClampReason(t *testing.T) {
	pad := strings.Repeat("r", MaxReasonLen-3)
	for _, c := range []struct{ in, want string }{
		{"http 503", "http 503"},
		{pad + "abc", pad + "abc"},
		{pad + "abcd", pad + "abc"},
		{pad + "abé" + "tail", pad + "ab"},    // é's second byte is past the cut
		{"x\xffy" + pad + "tail", "xy" + pad}, // a byte that was never UTF-8
		{string(make([]byte, 1000)), string(make([]byte, MaxReasonLen))},
	} {
		if got := clampReason(c.in); got != c.want || !utf8.ValidString(got) {
			t.Errorf("clampReason(%.20q...) = %.20q... (%d bytes), want %.20q... (%d bytes)", c.in, got, len(got), c.want, len(c.want))
		}
	}
}

// TestLateWithdrawalKeepsNewerTomb: a withdrawal that arrives after a newer withdrawal of the
// same check, both ahead of the row, must not let an older set of the check back in. Before,
// the late withdrawal lowered the tomb and the set at 4 came back after the withdrawal at 5.
func TestLateWithdrawalKeepsNewerTomb(t *testing.T) {
	tb := NewTable(4)
	w := func(seq uint64) delta {
		return delta{header: header{checker: "c", gen: 1, seq: seq, beat: 1}, op: opWithdraw, check: "a"}
	}
	tb.applyDelta(set(1, 1, 1, "a", checker.StatusHealthy), at(0))
	tb.applyDelta(w(5), at(1))
	tb.applyDelta(w(3), at(2))
	tb.applyDelta(set(1, 4, 1, "a", checker.StatusUnhealthy), at(3))
	tb.applyDelta(set(1, 2, 1, "b", checker.StatusHealthy), at(4))
	if got := cells(tb); len(got) != 1 || got["b"] != checker.StatusHealthy {
		t.Errorf("cells %v, want only b (a was withdrawn at 5)", got)
	}
	if r := tb.rows["c"]; r.seq != 5 || !r.complete() {
		t.Errorf("row at seq %d, want 5 complete", r.seq)
	}
}

// TestTableAheadKeepsNewest: a row behind a gap remembers the newest deltas beyond it, so
// that the repair (which covers the older ones) completes it; deltas sent after the repair's
// answer was made are the ones nothing else brings.
func TestTableAheadKeepsNewest(t *testing.T) {
	tb := NewTable(10)
	now := at(1)
	tb.applyDelta(set(1, 1, 1, "a", checker.StatusHealthy), now)
	last := uint64(3 + maxAhead + 10)
	for seq := uint64(3); seq <= last; seq++ { // seq 2 is lost
		tb.applyDelta(set(1, seq, 1, "a", checker.StatusHealthy), now)
	}
	if r := tb.rows["c"]; r.complete() {
		t.Fatalf("row complete across the gap at seq 2: seq %d, want %d", r.seq, r.want)
	}
	// The checker's answer to the repair, made when it was at seq 50.
	tb.applyRow(&fullRow{header: header{checker: "c", gen: 1, seq: 50, beat: 1},
		entries: []rowEntry{{check: "a", seq: 50, entry: Entry{Status: checker.StatusHealthy}}}}, now, false)
	if r := tb.rows["c"]; !r.complete() || r.seq != last {
		t.Errorf("after the repair: seq %d, want %d (complete %v)", r.seq, last, r.complete())
	}
}
