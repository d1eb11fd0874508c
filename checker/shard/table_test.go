package shard

import (
	"math/rand/v2"
	"testing"
)

// The open-addressing set agrees with Go's map through random adds and removes, including
// the clusters and wrap-arounds that backward-shift deletion must handle. Small key ranges
// force collisions.
func TestWordSetAgainstMap(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var s wordSet
		model := map[uint64]bool{}
		keyRange := uint64(50 + rng.IntN(5000))
		for op := range 40000 {
			w := rng.Uint64N(keyRange)
			if seed%2 == 1 {
				w <<= 40 // high-bit keys
			}
			switch rng.IntN(3) {
			case 0, 1:
				s.add(w)
				model[w] = true
			default:
				if got := s.remove(w); got != model[w] {
					t.Fatalf("seed %d op %d: remove(%d) = %v, model %v", seed, op, w, got, model[w])
				}
				delete(model, w)
			}
			if s.n != len(model) {
				t.Fatalf("seed %d op %d: %d words, model %d", seed, op, s.n, len(model))
			}
		}
		for w := range keyRange {
			if seed%2 == 1 {
				w <<= 40
			}
			if s.has(w) != model[w] {
				t.Fatalf("seed %d: has(%d) = %v, model %v", seed, w, s.has(w), model[w])
			}
		}
	}
	var empty wordSet
	if empty.has(0) || empty.remove(0) {
		t.Error("empty set holds 0")
	}
	if empty.add(0); !empty.has(0) {
		t.Error("0 is a word like any other")
	}
}
