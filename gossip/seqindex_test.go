package gossip

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
)

// TestSetIndexMatchesScan: whatever a row went through (deltas in and out of order, lost,
// withdrawals, withdraw-alls, whole rows), the changes since any sequence the index answers
// are those a scan of the row finds; and the index stays within its bound.
func TestSetIndexMatchesScan(t *testing.T) {
	indexed := 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 2))
		o := newOwnRow("c", 1)
		owner, tb := NewTable(4), NewTable(4)
		var held []delta // deltas not yet delivered to tb
		checks := 50 + rng.IntN(500)
		peak := map[*Table]int{}
		for step := range 3000 {
			var d delta
			var ok bool
			switch x := rng.IntN(200); {
			case x < 1:
				d, ok = o.withdrawAll()
			case x < 40:
				d, ok = o.withdraw(fmt.Sprintf("k%d", rng.IntN(checks)))
			default:
				d, ok = o.set(fmt.Sprintf("k%d", rng.IntN(checks)), Entry{Status: checker.StatusHealthy, Consecutive: uint32(step)})
			}
			if ok {
				owner.applyDelta(d, at(step))
				held = append(held, d)
			}
			// Deliver some held deltas, in any order; lose a few.
			for len(held) > 0 && rng.IntN(3) > 0 {
				i := rng.IntN(len(held))
				if rng.IntN(20) > 0 {
					tb.applyDelta(held[i], at(step))
				}
				held = append(held[:i], held[i+1:]...)
			}
			if rng.IntN(400) == 0 {
				tb.applyRow(owner.fullRow("c"), at(step), false)
			}
			for _, x := range []*Table{owner, tb} {
				r := x.rows["c"]
				if r == nil {
					continue
				}
				peak[x] = max(peak[x], r.cells.len())
				if n := len(r.sets.entries); n > 2*setIndexKeep(peak[x]) {
					t.Fatalf("seed %d step %d: index of %d entries for %d cells", seed, step, n, r.cells.len())
				}
				since := uint64(rng.Int64N(int64(r.seq) + 1))
				if since >= r.sets.from {
					indexed++
				}
				got, want := x.changedSince(r, since), x.scanSince(r, since)
				// sinceBytes is what the changes take encoded, exactly.
				if r.provable(since) {
					sr := x.sinceRow(r.checker, r.gen, since)
					enc := 0
					for _, e := range sr.entries {
						enc += len(appendRowEntry(nil, e))
					}
					for _, w := range sr.withdrawn {
						enc += len(binary.AppendUvarint(appendString(nil, w.check), w.seq))
					}
					if n := x.sinceBytes(r, since, math.MaxInt); n != enc {
						t.Fatalf("seed %d step %d: since %d: sinceBytes %d, encoded %d", seed, step, since, n, enc)
					}
				}
				if len(got) != 0 || len(want) != 0 {
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d step %d: since %d (index from %d): index %v, scan %v", seed, step, since, r.sets.from, got, want)
					}
				}
			}
		}
	}
	if indexed == 0 {
		t.Error("the index never answered")
	}
}

// BenchmarkAnswerSince measures building the changes of a row of 100,000 and 1,000,000 cells
// since a sequence 100 changes back: by the row's index by sequence, and by a scan of every
// cell (how every answer was built before the index).
func BenchmarkAnswerSince(b *testing.B) {
	for _, cells := range []int{100000, 1000000} {
		tb := NewTable(4)
		o := newOwnRow("c", 1)
		now := time.Unix(0, 0)
		for i := range cells {
			d, _ := o.set(fmt.Sprintf("check-%07d", i), measuredEntry(i))
			tb.applyDelta(d, now)
		}
		for i := range 1000 {
			d, _ := o.set(fmt.Sprintf("check-%07d", i*997%cells), Entry{Status: checker.StatusUnhealthy, Consecutive: uint32(i)})
			tb.applyDelta(d, now)
		}
		r := tb.rows["c"]
		since := r.seq - 100
		for _, path := range []struct {
			name string
			f    func(*row, uint64) []rowEntry
		}{{"index", tb.changedSince}, {"scan", tb.scanSince}} {
			b.Run(fmt.Sprintf("cells=%d/%s", cells, path.name), func(b *testing.B) {
				var n int
				for b.Loop() {
					n = len(path.f(r, since))
				}
				if n != 100 {
					b.Fatalf("%d changes, want 100", n)
				}
			})
		}
	}
}

// TestSortBySeq: placing entries by sequence sorts them as comparing does, for dense and
// sparse sequences and for sequences that repeat.
func TestSortBySeq(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		since := rng.Uint64N(1000)
		n := 1 + rng.IntN(300)
		span := uint64(n) * (1 + rng.Uint64N(8)) // dense to sparse
		var es []rowEntry
		used := map[uint64]bool{}
		for len(es) < n {
			seq := since + 1 + rng.Uint64N(span)
			if used[seq] && rng.IntN(50) != 0 {
				continue // now and then, a sequence twice
			}
			used[seq] = true
			es = append(es, rowEntry{check: fmt.Sprint(len(es)), seq: seq})
		}
		want := slices.Clone(es)
		slices.SortStableFunc(want, func(a, b rowEntry) int { return cmp.Compare(a.seq, b.seq) })
		sortBySeq(es, since)
		for i := range es {
			if es[i].seq != want[i].seq {
				t.Fatalf("seed %d: at %d seq %d, want %d", seed, i, es[i].seq, want[i].seq)
			}
		}
		got := map[string]bool{}
		for _, e := range es {
			got[e.check] = true
		}
		if len(es) != n || len(got) != n {
			t.Fatalf("seed %d: %d entries of %d checks, want %d", seed, len(es), len(got), n)
		}
	}
}
