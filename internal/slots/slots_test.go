package slots

import (
	"math/rand/v2"
	"testing"
)

// TestFreeReusesLastReleased: new places count up from 0, and a released place is handed out
// again, the last released first, before a new one.
func TestFreeReusesLastReleased(t *testing.T) {
	var f Free[int32]
	for want := int32(0); want < 4; want++ {
		if got := f.Take(); got != want {
			t.Fatalf("Take() = %d, want %d", got, want)
		}
	}
	f.Release(1)
	f.Release(3)
	if got := f.Used(); got != 2 {
		t.Errorf("Used() = %d, want 2", got)
	}
	for _, want := range []int32{3, 1, 4} {
		if got := f.Take(); got != want {
			t.Fatalf("Take() = %d, want %d", got, want)
		}
	}
	if got := f.Places(); got != 5 {
		t.Errorf("Places() = %d, want 5", got)
	}
}

// TestPlaceCoversTakenPlaces: Place appends a zero element for a new place and returns the
// element as it was left for a place taken again; a table of parallel slices stays as long
// as the places handed out.
func TestPlaceCoversTakenPlaces(t *testing.T) {
	type entry struct {
		name string
		gen  uint32
	}
	var (
		f       Free[uint32]
		entries []entry
		refs    []uint32
	)
	for _, name := range []string{"a", "b", "c"} {
		i := f.Take()
		e := Place(&entries, i)
		if *e != (entry{}) {
			t.Fatalf("new place %d holds %+v, want zero", i, *e)
		}
		*e = entry{name: name, gen: 1}
		*Place(&refs, i) = 1
	}
	entries[1] = entry{gen: entries[1].gen} // released: the name cleared, the generation kept
	f.Release(1)
	i := f.Take()
	if e := Place(&entries, i); i != 1 || e.gen != 1 || e.name != "" {
		t.Fatalf("place taken again: %d %+v, want 1 with generation 1", i, *e)
	}
	if len(entries) != f.Places() || len(refs) != f.Places() {
		t.Fatalf("slices of %d and %d entries for %d places", len(entries), len(refs), f.Places())
	}
}

// TestPlaceBeyondEndPanics: a place the table's slices do not cover and that is not the next
// new one is a caller's error, caught as an index out of range.
func TestPlaceBeyondEndPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Place two beyond the end did not panic")
		}
	}()
	var s []int
	Place(&s, 1)
}

// TestFreeRandomAgainstModel: random takes and releases never hand out a place in use, and
// Used and Places count as a set of places in use does.
func TestFreeRandomAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var (
		f     Free[int32]
		inUse = map[int32]bool{}
		held  []int32
		max   int
	)
	for range 100000 {
		if len(held) > 0 && rng.IntN(2) == 0 {
			k := rng.IntN(len(held))
			i := held[k]
			held[k] = held[len(held)-1]
			held = held[:len(held)-1]
			delete(inUse, i)
			f.Release(i)
			continue
		}
		i := f.Take()
		if inUse[i] {
			t.Fatalf("Take() = %d, in use", i)
		}
		if int(i) > max {
			t.Fatalf("Take() = %d, beyond the %d places handed out", i, max)
		}
		if int(i) == max {
			max++
		}
		inUse[i] = true
		held = append(held, i)
		if f.Used() != len(inUse) || f.Places() != max {
			t.Fatalf("Used %d Places %d, want %d and %d", f.Used(), f.Places(), len(inUse), max)
		}
	}
}

// benchEntry is the size of a verdict engine's check.
type benchEntry struct {
	id  string
	pad [9]uint64
}

// BenchmarkChurn takes and releases places of a table of 1,024 entries in use, through
// Free and Place and through the free list written out by hand that Free replaced: the two
// sub-benchmarks are the comparison, measured in one run.
func BenchmarkChurn(b *testing.B) {
	const live = 1024
	b.Run("slots", func(b *testing.B) {
		var (
			f       Free[int32]
			entries []benchEntry
		)
		for range live {
			*Place(&entries, f.Take()) = benchEntry{id: "x"}
		}
		for n := 0; b.Loop(); n++ {
			i := int32((n * 7919) % live)
			entries[i] = benchEntry{}
			f.Release(i)
			*Place(&entries, f.Take()) = benchEntry{id: "x"}
		}
	})
	b.Run("by-hand", func(b *testing.B) {
		var (
			free    []int32
			entries []benchEntry
		)
		take := func() int32 {
			if k := len(free); k > 0 {
				i := free[k-1]
				free = free[:k-1]
				return i
			}
			entries = append(entries, benchEntry{})
			return int32(len(entries) - 1)
		}
		for range live {
			entries[take()] = benchEntry{id: "x"}
		}
		for n := 0; b.Loop(); n++ {
			i := int32((n * 7919) % live)
			entries[i] = benchEntry{}
			free = append(free, i)
			entries[take()] = benchEntry{id: "x"}
		}
	})
}
