package gossip

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
)

// rowCells returns the cells of checker's row as a table holds them.
func rowCells(tb *Table, checker string) map[string]Entry {
	out := map[string]Entry{}
	if r := tb.rows[checker]; r != nil {
		tb.eachCell(r, func(check string, _ uint64, e Entry) { out[check] = e })
	}
	return out
}

// ownCells returns a checker's own cells.
func ownCells(o *ownRow) map[string]Entry {
	out := map[string]Entry{}
	for c, x := range o.cells {
		out[c] = x.entry
	}
	return out
}

// repairFrom asks src for checker's row as Node.answer does, in version 2, and applies the
// answer to dst. It returns what src answered: "since", "full" or "" for nothing.
func repairFrom(dst, src *Table, checker string, now time.Time) string {
	gen, seq, _ := dst.holds(checker)
	fr, sr := src.answerFor(ask{checker: checker, gen: gen, seq: seq}, wireV2)
	// Through the wire, as a node would receive it.
	m, err := decode(encodeRows(wireV2, nonNil(fr), nonNilSince(sr)))
	switch {
	case fr == nil && sr == nil:
		return ""
	case err != nil:
		panic(err)
	case sr != nil:
		dst.applySince(m.since[0], now)
		return "since"
	}
	dst.applyRow(m.rows[0], now, false)
	return "full"
}

func nonNil(f *fullRow) []*fullRow {
	if f == nil {
		return nil
	}
	return []*fullRow{f}
}

func nonNilSince(s *sinceRow) []*sinceRow {
	if s == nil {
		return nil
	}
	return []*sinceRow{s}
}

// TestSinceAnswersMissedChanges: a row that missed deltas of every kind, repaired by an
// answer of changes only, holds exactly the owner's row.
func TestSinceAnswersMissedChanges(t *testing.T) {
	H, U := Entry{Status: checker.StatusHealthy}, Entry{Status: checker.StatusUnhealthy}
	for _, tc := range []struct {
		name   string
		before func(o *ownRow) []delta // delivered to both
		missed func(o *ownRow) []delta // delivered to the owner's table only
		want   string                  // what the answer is
	}{
		{"sets", func(o *ownRow) []delta { return sets(o, H, "a", "b", "c") },
			func(o *ownRow) []delta { return sets(o, U, "b", "d") }, "since"},
		{"withdrawals", func(o *ownRow) []delta { return sets(o, H, "a", "b", "c") },
			func(o *ownRow) []delta {
				return append(withdraws(o, "a", "c"), sets(o, U, "a")...)
			}, "since"},
		{"withdraw-all", func(o *ownRow) []delta { return sets(o, H, "a", "b", "c") },
			func(o *ownRow) []delta {
				ds := sets(o, U, "b")
				d, _ := o.withdrawAll()
				ds = append(ds, d)
				return append(ds, sets(o, H, "e")...)
			}, "since"},
		{"withdraw-all, then withdrawals past the log", func(o *ownRow) []delta { return sets(o, H, "a") },
			func(o *ownRow) []delta {
				var ds []delta
				for i := range maxWithdrawLog + 5 {
					c := fmt.Sprintf("x%d", i)
					ds = append(ds, sets(o, H, c)...)
					ds = append(ds, withdraws(o, c)...)
				}
				d, _ := o.withdrawAll()
				ds = append(ds, d)
				ds = append(ds, sets(o, H, "b", "c")...)
				return append(ds, withdraws(o, "b")...)
			}, "since"},
		{"more withdrawals than the log holds", func(o *ownRow) []delta { return sets(o, H, "a") },
			func(o *ownRow) []delta {
				var ds []delta
				for i := range maxWithdrawLog + 1 {
					c := fmt.Sprintf("x%d", i)
					ds = append(ds, sets(o, H, c)...)
					ds = append(ds, withdraws(o, c)...)
				}
				return ds
			}, "full"},
		{"nothing missed", func(o *ownRow) []delta { return sets(o, H, "a") },
			func(o *ownRow) []delta { return nil }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOwnRow("c", 1)
			owner, loc := NewTable(4), NewTable(4)
			for _, d := range tc.before(o) {
				owner.applyDelta(d, at(0))
				loc.applyDelta(d, at(0))
			}
			missed := tc.missed(o)
			for _, d := range missed {
				owner.applyDelta(d, at(1))
			}
			if len(missed) > 0 {
				// The location hears of the missed changes by a heartbeat.
				loc.applyHeartbeat(o.heartbeat(), at(2))
			}
			if got := repairFrom(loc, owner, "c", at(3)); got != tc.want && !(tc.want == "" && got == "since") {
				t.Errorf("answer %q, want %q", got, tc.want)
			}
			if got, want := rowCells(loc, "c"), ownCells(o); !maps.Equal(got, want) {
				t.Errorf("location holds %v, owner %v", got, want)
			}
			if r := loc.rows["c"]; !r.complete() || r.seq != o.seq {
				t.Errorf("location's row at seq %d (want %d), complete %v", r.seq, o.seq, r.complete())
			}
			if !progress(loc).Equal(at(2)) && len(missed) > 0 {
				t.Errorf("progress at %v, want the heartbeat's 2s: a kept answer marks none of its own", progress(loc).Sub(t0))
			}
		})
	}
}

func sets(o *ownRow, e Entry, checks ...string) []delta {
	var ds []delta
	for _, c := range checks {
		if d, ok := o.set(c, e); ok {
			ds = append(ds, d)
		}
	}
	return ds
}

func withdraws(o *ownRow, checks ...string) []delta {
	var ds []delta
	for _, c := range checks {
		if d, ok := o.withdraw(c); ok {
			ds = append(ds, d)
		}
	}
	return ds
}

// TestSinceNeverPartial: a row answers with changes only when it can prove it holds them
// all; otherwise with the whole row, or not at all.
func TestSinceNeverPartial(t *testing.T) {
	o := newOwnRow("c", 1)
	owner := NewTable(4)
	apply := func(ds []delta) {
		for _, d := range ds {
			owner.applyDelta(d, at(0))
		}
	}
	apply(sets(o, Entry{Status: checker.StatusHealthy}, "a", "b", "c", "d"))
	apply(withdraws(o, "a"))
	// A third node that took the row whole at seq 5, then the deltas after it.
	third := NewTable(4)
	third.applyRow(owner.fullRow("c"), at(0), false)
	var later []delta
	later = append(later, withdraws(o, "b")...)
	later = append(later, sets(o, Entry{Status: checker.StatusUnhealthy}, "c")...)
	apply(later)
	for _, d := range later {
		third.applyDelta(d, at(1))
	}
	for _, tc := range []struct {
		name  string
		tb    *Table
		ask   ask
		since bool // a since answer, else a full row
		none  bool
	}{
		{"owner, from the start", owner, ask{checker: "c", gen: 1, seq: 0}, true, false},
		{"owner, from 3", owner, ask{checker: "c", gen: 1, seq: 3}, true, false},
		{"third node, from before its whole row", third, ask{checker: "c", gen: 1, seq: 4}, false, false},
		{"third node, from its whole row on", third, ask{checker: "c", gen: 1, seq: 5}, true, false},
		{"another generation", owner, ask{checker: "c", gen: 0, seq: 3}, false, false},
		{"the asker holds a newer generation", owner, ask{checker: "c", gen: 2, seq: 1}, false, true},
		{"the asker holds more", owner, ask{checker: "c", gen: 1, seq: 9}, false, true},
		{"unknown row", owner, ask{checker: "x"}, false, true},
	} {
		fr, sr := tc.tb.answerFor(tc.ask, wireV2)
		switch {
		case tc.none && (fr != nil || sr != nil):
			t.Errorf("%s: answered %v %v, want nothing", tc.name, fr, sr)
		case !tc.none && tc.since && sr == nil:
			t.Errorf("%s: no since answer", tc.name)
		case !tc.none && !tc.since && (fr == nil || sr != nil):
			t.Errorf("%s: answered %v %v, want the whole row", tc.name, fr, sr)
		}
	}
	// A table behind on the row answers nothing.
	third.applyHeartbeat(header{checker: "c", gen: 1, seq: 99, beat: 1}, at(2))
	if fr, sr := third.answerFor(ask{checker: "c", gen: 1, seq: 5}, wireV2); fr != nil || sr != nil {
		t.Errorf("a row behind answered")
	}
	// Version 1 asks always get the whole row.
	if fr, sr := owner.answerFor(ask{checker: "c"}, wireV1); fr == nil || sr != nil {
		t.Errorf("a version 1 ask was not answered with the whole row")
	}
}

// TestSinceRandom: a checker changes its row at random (sets, withdrawals, withdraw-alls,
// restarts) while two tables hear some of its deltas and repair from it and from each other
// by answers of changes only where provable. Whenever a table holds the row complete, it holds
// exactly what the checker held at that sequence; so no answer was ever partial.
func TestSinceRandom(t *testing.T) {
	counts := sinceRandom(t, 20, func(dst, src *Table, now time.Time, _ *rand.Rand) string {
		return repairFrom(dst, src, "c", now)
	})
	t.Logf("answers: %v", counts)
	if counts["since"] == 0 || counts["full"] == 0 {
		t.Errorf("answers %v: want both changes only and whole rows", counts)
	}
}

// sinceRandom runs the random history of TestSinceRandom, with checks k0 to k(checks-1),
// repairing by repair, and returns how often each answer came.
func sinceRandom(t *testing.T, checks int, repair func(dst, src *Table, now time.Time, rng *rand.Rand) string) map[string]int {
	counts := map[string]int{}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 15))
		gen := uint64(1)
		o := newOwnRow("c", gen)
		history := map[uint64]map[string]Entry{0: {}}
		owner := NewTable(4)
		tables := []*Table{NewTable(4), NewTable(4)}
		// quiet is when each table stops hearing deltas for a while (a cut), so that it
		// misses more than a withdrawal log holds.
		quiet := []int{rng.IntN(600), rng.IntN(600)}
		for step := range 900 {
			now := at(step)
			var d delta
			var ok bool
			switch x := rng.IntN(100); {
			case x < 1:
				gen++
				o = newOwnRow("c", gen)
				history = map[uint64]map[string]Entry{0: {}}
				d, ok = o.set("a", Entry{Status: checker.StatusHealthy}) // a restart: a new generation
			case x < 3:
				d, ok = o.withdrawAll()
			case x < 45:
				d, ok = o.withdraw(fmt.Sprintf("k%d", rng.IntN(checks)))
			default:
				d, ok = o.set(fmt.Sprintf("k%d", rng.IntN(checks)), Entry{Status: checker.Status(1 + rng.IntN(2)), Consecutive: uint32(step)})
			}
			if ok {
				history[o.seq] = ownCells(o)
				owner.applyDelta(d, now)
				for i, tb := range tables {
					if (step < quiet[i] || step > quiet[i]+250) && rng.IntN(3) > 0 {
						tb.applyDelta(d, now)
					}
				}
			}
			if rng.IntN(10) == 0 {
				h := o.heartbeat()
				for _, tb := range tables {
					tb.applyHeartbeat(h, now)
				}
			}
			if rng.IntN(8) == 0 {
				i := rng.IntN(len(tables))
				src := owner
				if rng.IntN(2) == 0 {
					src = tables[1-i]
				}
				counts[repair(tables[i], src, now, rng)]++
			}
			for i, tb := range tables {
				r := tb.rows["c"]
				if r == nil || r.gen != gen || !r.complete() {
					continue
				}
				want, ok := history[r.seq]
				if !ok {
					t.Fatalf("seed %d step %d: table %d complete at seq %d, which the checker never had", seed, step, i, r.seq)
				}
				if got := rowCells(tb, "c"); !maps.Equal(got, want) {
					t.Fatalf("seed %d step %d: table %d at seq %d holds %v, the checker held %v", seed, step, i, r.seq, got, want)
				}
				if len(r.log.entries) > maxWithdrawLog {
					t.Fatalf("seed %d: log of %d withdrawals", seed, len(r.log.entries))
				}
			}
		}
	}
	return counts
}

// TestOwnHeaderIsTimely: the header of a checker's own row in its push/pull is a timely word
// of the checker: progress when the row is complete; when the row is behind, the progress it
// said once an answer completes the row. A third node's digest marks none.
func TestOwnHeaderIsTimely(t *testing.T) {
	o := newOwnRow("c", 1)
	owner, loc := NewTable(4), NewTable(4)
	for _, d := range sets(o, Entry{Status: checker.StatusHealthy}, "a", "b") {
		owner.applyDelta(d, at(0))
	}
	if _, behind := loc.applyOwnHeader(o.heartbeat(), at(1)); !behind {
		t.Fatal("a location that holds nothing is not behind")
	}
	if !progress(loc).IsZero() {
		t.Error("progress before the row is held")
	}
	repairFrom(loc, owner, "c", at(3))
	if !progress(loc).Equal(at(1)) {
		t.Errorf("progress at %v, want the header's 1s", progress(loc).Sub(t0))
	}
	if _, behind := loc.applyOwnHeader(o.heartbeat(), at(5)); behind || !progress(loc).Equal(at(5)) {
		t.Errorf("a new beat of a complete row: behind %v, progress at %v, want 5s", behind, progress(loc).Sub(t0))
	}
	if _, behind := loc.applyOwnHeader(o.header(), at(6)); behind || !progress(loc).Equal(at(5)) {
		t.Errorf("the same header again counted as progress at %v", progress(loc).Sub(t0))
	}
	loc.applyDigest([]header{o.heartbeat()}, at(7))
	if !progress(loc).Equal(at(5)) {
		t.Errorf("a digest's beat counted as progress at %v", progress(loc).Sub(t0))
	}
}
