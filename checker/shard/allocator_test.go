package shard

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func mustAllocator(t testing.TB, fleet, size, overlap int) *Allocator {
	t.Helper()
	n := mustNameServers(t, settings(fleet, size, overlap))
	a, err := n.NewAllocator()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func zoneName(i int) string { return "zone-" + strconv.Itoa(i) + ".example." }

// allocateAll allocates zones 0..n-1, stopping at the first ErrFleetFull, and returns the
// shards allocated.
func allocateAll(t testing.TB, a *Allocator, n int) [][]int {
	t.Helper()
	var out [][]int
	for i := range n {
		s, err := a.Allocate(zoneName(i))
		if errors.Is(err, ErrFleetFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// worstPair compares every pair of shards and returns the most servers any two share and
// which two.
func worstPair(shards [][]int) (most, i, j int) {
	if len(shards) > 0 && len(shards[0]) == 4 && slices.Max(slices.Concat(shards...)) < 0x8000 {
		return worstPair4(shards)
	}
	for x := range shards {
		for y := x + 1; y < len(shards); y++ {
			if n := shared(shards[x], shards[y]); n > most {
				most, i, j = n, x, y
			}
		}
	}
	return most, i, j
}

// worstPair4 is worstPair for shards of 4 servers below 32768, fast enough to compare 200
// million pairs in about a second: each shard is packed in four 16-bit lanes, and the lanes
// equal between a and each rotation of b are counted with a few word operations.
func worstPair4(shards [][]int) (most, i, j int) {
	const low, high = 0x7fff7fff7fff7fff, 0x8000800080008000
	packed := make([]uint64, len(shards))
	for x, s := range shards {
		for lane, v := range s {
			packed[x] |= uint64(v) << (16 * lane)
		}
	}
	for x, a := range packed {
		for y := x + 1; y < len(packed); y++ {
			b, n := packed[y], 0
			for range 4 {
				// A lane of a^b is below 0x8000; adding 0x7fff sets its top bit unless it
				// is zero, and never carries into the next lane.
				n += 4 - bits.OnesCount64(((a^b)+low)&high)
				b = bits.RotateLeft64(b, 16)
			}
			if n > most {
				most, i, j = n, x, y
			}
		}
	}
	return most, i, j
}

// The pairwise checks find what they are meant to find.
func TestWorstPair(t *testing.T) {
	four := [][]int{{1, 2, 3, 4}, {5, 6, 7, 8}, {0, 3, 9, 1}, {2, 8, 10, 2047}, {4, 6, 9, 3}}
	if most, i, j := worstPair(four); most != 2 || i != 0 || j != 2 {
		t.Errorf("worstPair = %d between %d and %d, want 2 between 0 and 2", most, i, j)
	}
	four = append(four, []int{1, 9, 3, 4})
	if most, i, j := worstPair(four); most != 3 || i != 0 || j != 5 {
		t.Errorf("worstPair = %d between %d and %d, want 3 between 0 and 5", most, i, j)
	}
	three := [][]int{{1, 2, 3}, {3, 4, 5}, {2, 3, 9}}
	if most, i, j := worstPair(three); most != 2 || i != 0 || j != 2 {
		t.Errorf("worstPair = %d between %d and %d, want 2 between 0 and 2", most, i, j)
	}
}

// Route 53's settings: 20,000 zones over 2,048 servers, every pair of zones compared.
func TestAllocatorOverlapDefaultFleet(t *testing.T) {
	a := mustAllocator(t, 2048, 4, 2)
	shards := allocateAll(t, a, 20000)
	if len(shards) != 20000 || a.Len() != 20000 || a.Subsets() != 4*20000 {
		t.Fatalf("allocated %d zones (%d held, %d subsets), want 20000 with 4 subsets each", len(shards), a.Len(), a.Subsets())
	}
	if most, i, j := worstPair(shards); most > 2 {
		t.Fatalf("zones %d %v and %d %v share %d servers", i, shards[i], j, shards[j], most)
	}
	for i, s := range shards {
		if got, ok := a.Servers(zoneName(i)); !ok || !slices.Equal(got, s) {
			t.Fatalf("Servers(%s) = %v, %v; allocated %v", zoneName(i), got, ok, s)
		}
	}
}

// On a small fleet the limit binds: the allocator fills it without breaking the guarantee,
// while stateless shards of the same zones break it (so the pairwise check can fail).
func TestAllocatorOverlapSmallFleets(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 5))
		size := 2 + rng.IntN(4)
		fleet := size + 4 + rng.IntN(30)
		overlap := rng.IntN(size)
		a := mustAllocator(t, fleet, size, overlap)
		shards := allocateAll(t, a, 400)
		if len(shards) == 0 {
			t.Fatalf("seed %d: fleet %d size %d overlap %d: nothing allocated", seed, fleet, size, overlap)
		}
		if most, i, j := worstPair(shards); most > overlap {
			t.Fatalf("seed %d: fleet %d size %d overlap %d: zones %v and %v share %d", seed, fleet, size, overlap, shards[i], shards[j], most)
		}
		if len(shards) < 400 {
			// Full: one more zone must be refused, not squeezed in.
			if _, err := a.Allocate("one-more.example."); !errors.Is(err, ErrFleetFull) {
				t.Errorf("seed %d: full fleet accepted another zone: %v", seed, err)
			}
		}
		stateless := make([][]int, len(shards))
		for i := range shards {
			stateless[i] = a.ns.Stateless(zoneName(i))
		}
		if most, _, _ := worstPair(stateless); len(shards) > 60 && most <= overlap {
			t.Errorf("seed %d: %d stateless shards never exceeded overlap %d; the check would not catch a broken allocator", seed, len(shards), overlap)
		}
	}
}

// The seed example of the articles, as a test: 8 workers, shards of 2, no two customers
// sharing more than 1. There are exactly C(8,2) = 28 such shards; a 29th customer cannot be
// placed. When one customer's shard is poisoned, every other customer keeps at least one
// healthy worker: the blast radius is 1 customer in 28, where 4 plain shards of 2 would lose 1
// customer in 4 with every one of its workers.
func TestSeedExampleEightWorkersShardsOfTwo(t *testing.T) {
	a := mustAllocator(t, 8, 2, 1)
	var customers []string
	for i := range 28 {
		c := "customer-" + strconv.Itoa(i) + "."
		if _, err := a.Allocate(c); err != nil {
			t.Fatalf("customer %d of 28: %v", i, err)
		}
		customers = append(customers, c)
	}
	if _, err := a.Allocate("customer-28."); !errors.Is(err, ErrFleetFull) {
		t.Fatalf("a 29th customer got a shard: %v", err)
	}
	for _, poisoned := range customers {
		br, err := a.BlastRadius(poisoned, -1)
		if err != nil {
			t.Fatal(err)
		}
		// Each poisoned worker is shared with 6 other customers: 12 lose one worker of two,
		// the other 15 lose none, and nobody loses both.
		if br.Others != 27 || br.Contained != 0 || !slices.Equal(br.Histogram, []int{15, 12, 0}) {
			t.Fatalf("poisoned %s %v: %d others, %d contained, histogram %v; want 27, 0, [15 12 0]",
				poisoned, br.Workers, br.Others, br.Contained, br.Histogram)
		}
		bad, _ := a.Servers(poisoned)
		for name, shard := range a.All() {
			if name != poisoned && shared(shard, bad) == len(shard) {
				t.Fatalf("poisoning %s left %s with no healthy worker", poisoned, name)
			}
		}
	}
}

// Two control-plane replicas applying the same operations in the same order agree.
func TestAllocatorDeterministic(t *testing.T) {
	run := func() []string {
		a := mustAllocator(t, 16, 4, 2)
		var log []string
		for i := range 300 {
			s, err := a.Allocate(zoneName(i))
			log = append(log, fmt.Sprint(zoneName(i), s, err))
			if i%7 == 3 {
				a.Release(zoneName(i / 2))
			}
		}
		return log
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Fatal("the same operations gave different allocations")
	}
	if !slices.ContainsFunc(a, func(l string) bool { return strings.Contains(l, ErrFleetFull.Error()) }) {
		t.Error("the fleet never filled up: the test did not exercise the limit")
	}
}

// An allocator restored from stored allocations, in any order, holds the same zones and then
// allocates exactly as the original does.
func TestAllocatorRestore(t *testing.T) {
	orig := mustAllocator(t, 48, 4, 2)
	allocateAll(t, orig, 500)
	for i := 0; i < 500; i += 9 {
		orig.Release(zoneName(i))
	}
	type stored struct {
		zone    string
		servers []int
	}
	var saved []stored
	for z, s := range orig.All() {
		saved = append(saved, stored{z, s})
	}
	rng := rand.New(rand.NewPCG(1, 9))
	rng.Shuffle(len(saved), func(i, j int) { saved[i], saved[j] = saved[j], saved[i] })
	restored := mustAllocator(t, 48, 4, 2)
	for _, s := range saved {
		if err := restored.Restore(s.zone, s.servers); err != nil {
			t.Fatal(err)
		}
	}
	if restored.Len() != orig.Len() || restored.Subsets() != orig.Subsets() {
		t.Fatalf("restored %d zones, %d subsets; original %d, %d", restored.Len(), restored.Subsets(), orig.Len(), orig.Subsets())
	}
	for i := 1000; i < 1300; i++ {
		x, errX := orig.Allocate(zoneName(i))
		y, errY := restored.Allocate(zoneName(i))
		if !slices.Equal(x, y) || (errX == nil) != (errY == nil) {
			t.Fatalf("after restore, %s: original %v %v, restored %v %v", zoneName(i), x, errX, y, errY)
		}
	}
}

// Restore refuses bad stored allocations with a clear error and changes nothing.
func TestAllocatorRestoreErrors(t *testing.T) {
	a := mustAllocator(t, 2048, 4, 2)
	if err := a.Restore("held.example.", []int{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := a.Restore("HELD.example", []int{4, 3, 2, 1}); err != nil {
		t.Errorf("restoring the same allocation again: %v", err)
	}
	for _, tc := range []struct {
		zone    string
		servers []int
		want    string
	}{
		{"", []int{5, 6, 7, 8}, "empty zone name"},
		{"a.example.", []int{5, 6, 7}, "3 name servers, want 4"},
		{"a.example.", []int{5, 6, 7, 2048}, "name server 2048 outside the fleet"},
		{"a.example.", []int{5, 6, 7, -1}, "name server -1 outside the fleet"},
		{"a.example.", []int{5, 6, 6, 7}, "name server 6 repeated"},
		{"held.example.", []int{5, 6, 7, 8}, "already holds [1 2 3 4]"},
		{"a.example.", []int{1, 2, 3, 9}, "shares more than 2 name servers with zone held.example."},
	} {
		err := a.Restore(tc.zone, tc.servers)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "shard: restore") {
			t.Errorf("Restore(%q, %v) = %v, want an error containing %q", tc.zone, tc.servers, err, tc.want)
		}
	}
	if a.Len() != 1 || a.Subsets() != 4 {
		t.Errorf("failed restores changed the allocator: %d zones, %d subsets", a.Len(), a.Subsets())
	}
	if err := a.Restore("a.example.", []int{1, 2, 8, 9}); err != nil {
		t.Errorf("sharing exactly the limit is allowed: %v", err)
	}
	if !a.Release("held.example.") || a.Release("held.example.") {
		t.Error("Release did not report what it held")
	}
	if err := a.Restore("b.example.", []int{1, 2, 3, 10}); err != nil {
		t.Errorf("after release, its servers are free again: %v", err)
	}
	for _, bad := range []string{" ", ".", "a..b.", ".a."} {
		if _, err := a.Allocate(bad); err == nil || !strings.HasPrefix(err.Error(), "shard: allocate: ") {
			t.Errorf("Allocate(%q) = %v, want an error", bad, err)
		}
	}
}
