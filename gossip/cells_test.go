package gossip

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
)

// TestCellSetMatchesMap: a cellSet, through its changes of form (a map, dense once it holds
// half of its numbers, a map again once sparse), holds what a plain map would.
func TestCellSetMatchesMap(t *testing.T) {
	sawDense, sawMap := false, false
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var s cellSet
		want := map[uint32]heldCell{}
		span := uint32(50 + rng.IntN(2000))
		for step := range 5000 {
			i := rng.Uint32N(span)
			switch op := rng.IntN(10); {
			case op < 6:
				c := heldCell{seq: uint64(step + 1), latency: uint32(step), status: checker.StatusHealthy}
				_, had := want[i]
				if added := s.put(i, c); added == had {
					t.Fatalf("seed %d step %d: put %d said added %v, held %v", seed, step, i, added, had)
				}
				c.held = true
				want[i] = c
			case op < 9:
				if _, ok := want[i]; ok {
					s.del(i)
					delete(want, i)
				}
			default:
				// Now and then a number far off, or a widening of the span.
				if rng.IntN(100) == 0 {
					span = 50 + rng.Uint32N(20000)
				}
			}
			if s.dense != nil {
				sawDense = true
			} else if s.m != nil {
				sawMap = true
			}
			if s.len() != len(want) {
				t.Fatalf("seed %d step %d: len %d, want %d", seed, step, s.len(), len(want))
			}
			if got, ok := s.get(i); ok != (want[i] != heldCell{}) || got != want[i] {
				t.Fatalf("seed %d step %d: get %d = %v %v, want %v", seed, step, i, got, ok, want[i])
			}
			if step%500 == 0 {
				n := 0
				for j, c := range s.all {
					if want[j] != c {
						t.Fatalf("seed %d step %d: all yields %d = %v, want %v", seed, step, j, c, want[j])
					}
					n++
				}
				if n != len(want) {
					t.Fatalf("seed %d step %d: all yields %d cells, want %d", seed, step, n, len(want))
				}
			}
		}
		// Delete while ranging, down to nothing.
		for j := range s.all {
			s.del(j)
		}
		if s.len() != 0 || s.dense != nil || s.m != nil {
			t.Fatalf("seed %d: after deleting all, %d cells held, dense %d, map %d", seed, s.len(), len(s.dense), len(s.m))
		}
	}
	if !sawDense || !sawMap {
		t.Errorf("the sets were dense at some step: %v; maps: %v", sawDense, sawMap)
	}
}

// TestCellSetSparseStaysMap: a row holding a few checks among many numbers does not cost an
// array of every number below its highest (a checker's share of a large fleet's checks).
func TestCellSetSparseStaysMap(t *testing.T) {
	var s cellSet
	for i := range uint32(600) {
		s.put(i*1667, heldCell{seq: 1})
	}
	if s.dense != nil {
		t.Fatalf("600 cells over 1,000,000 numbers are held in an array of %d", len(s.dense))
	}
	// A dense row that loses most of its cells and then takes a far number is a map again.
	var d cellSet
	for i := range uint32(1000) {
		d.put(i, heldCell{seq: 1})
	}
	if d.dense == nil {
		t.Fatal("1,000 cells over 1,000 numbers are not dense")
	}
	for i := range uint32(990) {
		d.del(i)
	}
	d.put(1_000_000, heldCell{seq: 2})
	if d.dense != nil || d.len() != 11 {
		t.Fatalf("11 cells, one far off: dense %d, len %d", len(d.dense), d.len())
	}
}

// TestTableCellBytes bounds the memory of a location's table per cell: six rows of the same
// checks, as a location holds six checkers' reports on each check. Held in maps, the cells
// cost 41 to 79 bytes each (SCALE.md); in arrays 24, plus each check's interned id shared by
// the six rows (35.5 bytes a cell with a map from id to number; 30.9 with
// internal/keyindex).
func TestTableCellBytes(t *testing.T) {
	const checks, rows = 100_000, 6
	ids := make([]string, checks)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i)
	}
	before := heapAfterGC()
	tb := NewTable(16)
	now := time.Unix(1, 0)
	for k := range rows {
		h := header{checker: fmt.Sprintf("chk-%d", k), gen: 1}
		for i, id := range ids {
			h.seq, h.beat = uint64(i+1), uint64(i+1)
			tb.applyDelta(delta{header: h, op: opSet, check: id, entry: Entry{Status: checker.StatusHealthy, Consecutive: 3}}, now)
		}
	}
	after := heapAfterGC()
	if n, _ := tb.Len(); n != checks*rows {
		t.Fatalf("table holds %d reports, want %d", n, checks*rows)
	}
	per := float64(after-before) / (checks * rows)
	t.Logf("%.1f bytes a cell (%d cells)", per, checks*rows)
	if per > 33 {
		t.Errorf("%.1f bytes a cell, want at most 33", per)
	}
	runtime.KeepAlive(tb)
	runtime.KeepAlive(ids)
}

func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
