package shard

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestShardSizeAndOrder(t *testing.T) {
	r := NewRegion("us-east", []string{"c", "a", "b", "a", ""})
	if got := r.Checkers(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("checkers = %v, want [a b c]: duplicates and empty ids dropped, sorted", got)
	}
	for k, want := range map[int]int{-1: 0, 0: 0, 1: 1, 2: 2, 3: 3, 5: 3} {
		got := r.Shard("web", k)
		if len(got) != want {
			t.Errorf("k=%d: shard %v, want %d checkers", k, got, want)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
			t.Errorf("k=%d: shard %v repeats a checker", k, got)
		}
	}
	// The k-shard is the prefix of the (k+1)-shard: rank order is one list.
	if a, b := r.Shard("web", 2), r.Shard("web", 3); !slices.Equal(a, b[:2]) {
		t.Errorf("shard k=2 %v is not the prefix of k=3 %v", a, b)
	}
	if got := NewRegion("empty", nil).Shard("web", 2); len(got) != 0 {
		t.Errorf("empty region gave shard %v", got)
	}
}

// Every node computes the same shards from the same set of members, whatever order its
// membership list has.
func TestShardDeterministicAcrossNodes(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		members := ids(rng, "checker", 1+rng.IntN(150))
		k := 1 + rng.IntN(6)
		a := NewRegion("r", members)
		b := NewRegion("r", append(shuffled(rng, members), members[0])) // another node's view
		for _, check := range ids(rng, "check", 200) {
			if x, y := a.Shard(check, k), b.Shard(check, k); !slices.Equal(x, y) {
				t.Fatalf("seed %d: check %s: node A %v, node B %v", seed, check, x, y)
			}
		}
	}
}

// Holds answers, for one checker, the same question AppendShard answers for all of them.
func TestHoldsAgreesWithShard(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	r := NewRegion("r", ids(rng, "c", 40))
	for _, key := range hashes("check", 300) {
		for _, k := range []int{1, 2, 3, 39, 40, 41} {
			shard := r.AppendShard(nil, key, k)
			for m := range r.Len() {
				if got, want := r.Holds(m, key, k), slices.Contains(shard, int32(m)); got != want {
					t.Fatalf("k=%d member %d: Holds=%v, in shard %v=%v", k, m, got, shard, want)
				}
			}
		}
	}
	if r.Holds(-1, 1, 2) || r.Holds(r.Len(), 1, 2) || r.Holds(0, 1, 0) {
		t.Error("Holds accepted an out-of-range member or k=0")
	}
}

// When a checker leaves, exactly the checks it held move, each by one checker; when one
// joins, only the checks it now holds move, each by one checker, and it takes about its fair
// share: within 10% of 1/(N+1) of all assignments.
func TestMovementBounds(t *testing.T) {
	const checks, k = 60000, 3
	keys := hashes("check", checks)
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 2))
		n := 50 + rng.IntN(100)
		members := ids(rng, "c", n+1)
		joiner := members[n]
		members = members[:n]
		leaver := members[rng.IntN(n)]
		before := NewRegion("r", members)
		left := NewRegion("r", without(members, leaver))
		joined := NewRegion("r", append(slices.Clone(members), joiner))

		held, moved := 0, 0
		took := 0
		for _, key := range keys {
			old := names(before, before.AppendShard(nil, key, k))
			afterLeave := names(left, left.AppendShard(nil, key, k))
			if slices.Contains(old, leaver) {
				held++
				if d := diff(old, afterLeave); d != 1 || slices.Contains(afterLeave, leaver) {
					t.Fatalf("seed %d: leave: %v -> %v changes %d members, want exactly the leaver replaced", seed, old, afterLeave, d)
				}
			} else if !slices.Equal(old, afterLeave) {
				t.Fatalf("seed %d: leave: check not held by %s moved: %v -> %v", seed, leaver, old, afterLeave)
			}
			if !slices.Equal(old, afterLeave) {
				moved++
			}
			afterJoin := names(joined, joined.AppendShard(nil, key, k))
			if slices.Contains(afterJoin, joiner) {
				took++
				if d := diff(old, afterJoin); d != 1 {
					t.Fatalf("seed %d: join: %v -> %v changes %d members, want 1", seed, old, afterJoin, d)
				}
			} else if !slices.Equal(old, afterJoin) {
				t.Fatalf("seed %d: join: check the joiner did not take moved: %v -> %v", seed, old, afterJoin)
			}
		}
		if moved != held {
			t.Errorf("seed %d: leave moved %d checks, the leaver held %d", seed, moved, held)
		}
		got, ideal := float64(took)/float64(checks*k), 1/float64(n+1)
		if got < 0.9*ideal || got > 1.1*ideal {
			t.Errorf("seed %d: join of one checker to %d moved %.5f of assignments, ideal %.5f (±10%%)", seed, n, got, ideal)
		}
	}
}

// With 100 checkers and 1,000 checks per checker on average, no checker's load strays far:
// coefficient of variation at most 5%.
func TestBalance(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	r := NewRegion("r", ids(rng, "checker", 100))
	const k = 2
	counts := loads(r, hashes("check", 100*1000/k), k)
	cv, peak := spread(counts)
	if cv > 0.05 {
		t.Errorf("coefficient of variation %.2f%%, want at most 5%%", 100*cv)
	}
	if peak > 1.2 {
		t.Errorf("max/mean %.3f, want at most 1.2", peak)
	}
	t.Logf("cv %.2f%%, max/mean %.3f", 100*cv, peak)
}

func names(r *Region, idx []int32) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = r.Checker(int(j))
	}
	return out
}

// diff counts the members of b that are not in a.
func diff(a, b []string) int {
	n := 0
	for _, x := range b {
		if !slices.Contains(a, x) {
			n++
		}
	}
	return n
}

// The comparison ring of the benchmarks works: shards of distinct members, all used.
func TestKetamaComparison(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	r := newKetama(ids(rng, "c", 50), 160)
	if len(r.points) != 50*160 {
		t.Fatalf("%d points, want %d", len(r.points), 50*160)
	}
	counts := r.loads(hashes("check", 20000), 3)
	for m, c := range counts {
		if c == 0 {
			t.Errorf("member %d holds nothing", m)
		}
	}
	for _, key := range hashes("x", 100) {
		s := r.appendShard(nil, key, 3)
		if len(s) != 3 || s[0] == s[1] || s[1] == s[2] || s[0] == s[2] {
			t.Fatalf("ring shard %v, want 3 distinct members", s)
		}
	}
}
