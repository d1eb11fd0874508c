package shard

import (
	"slices"
)

// Region is one region's live checkers as one node sees them, each id hashed once. Its
// assignments depend only on the set of ids, never on the order they were given in, so every
// node with the same view computes the same shards.
//
// A Region costs 8 bytes per member beyond the ids themselves (one 64-bit hash); compare
// 1,280 bytes per member for a ketama ring of 160 eight-byte points.
type Region struct {
	name   string
	ids    []string // sorted, unique
	hashes []uint64 // hashes[i] = hashString(ids[i])
}

// NewRegion returns the region name with the given live checkers. Duplicate and empty ids
// are dropped; the slice is not retained.
func NewRegion(name string, checkers []string) *Region {
	ids := make([]string, 0, len(checkers))
	for _, id := range checkers {
		if id != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	r := &Region{name: name, ids: slices.Clip(ids), hashes: make([]uint64, len(ids))}
	for i, id := range ids {
		r.hashes[i] = hashString(id)
	}
	return r
}

// Name returns the region's name.
func (r *Region) Name() string { return r.name }

// Len returns the number of live checkers.
func (r *Region) Len() int { return len(r.ids) }

// Checkers returns the live checkers in id order. The caller must not modify the slice.
func (r *Region) Checkers() []string { return r.ids }

// Checker returns the id of the i-th checker in id order.
func (r *Region) Checker(i int) string { return r.ids[i] }

// Index returns the position of checker in id order, or -1 when it is not a member.
func (r *Region) Index(checker string) int {
	i, ok := slices.BinarySearch(r.ids, checker)
	if !ok {
		return -1
	}
	return i
}

// Shard returns the k checkers that probe check in this region, highest rendezvous weight
// first; all of them, in that order, when the region has fewer than k. k below 1 gives none.
func (r *Region) Shard(check string, k int) []string {
	idx := r.AppendShard(nil, HashKey(check), k)
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = r.ids[j]
	}
	return out
}

// HashKey returns the hash of a check id or zone name that AppendShard and Holds take, so a
// caller assigning one check in many regions hashes its id once.
func HashKey(id string) uint64 { return hashString(id) }

// maxStackK is the largest shard size AppendShard selects without allocating scratch space.
const maxStackK = 16

// AppendShard appends to dst the positions (in id order) of the min(k, Len()) checkers with
// the highest weights for the key hash, highest first, and returns the extended slice. Ties
// of weight, which need a 64-bit collision, go to the lower id. It allocates nothing when dst
// has room and k is at most 16.
func (r *Region) AppendShard(dst []int32, key uint64, k int) []int32 {
	n := len(r.hashes)
	if k > n {
		k = n
	}
	if k <= 0 {
		return dst
	}
	var stackScores [maxStackK]uint64
	var stackIdx [maxStackK]int32
	scores, idx := stackScores[:0], stackIdx[:0]
	if k > maxStackK {
		scores, idx = make([]uint64, 0, k), make([]int32, 0, k)
	}
	// Keep the best k seen so far in descending order of weight. After the first k, a member
	// enters only when it beats the current k-th (the threshold), which is rare, so the main
	// loop is one mix and one comparison per member.
	insert := func(s uint64, i int) {
		j := len(scores)
		scores, idx = append(scores, 0), append(idx, 0)
		for j > 0 && scores[j-1] < s {
			scores[j], idx[j] = scores[j-1], idx[j-1]
			j--
		}
		scores[j], idx[j] = s, int32(i)
	}
	for i, h := range r.hashes[:k] {
		insert(score(h, key), i)
	}
	threshold := scores[k-1]
	for i, h := range r.hashes[k:] {
		if s := score(h, key); s > threshold {
			scores, idx = scores[:k-1], idx[:k-1]
			insert(s, k+i)
			threshold = scores[k-1]
		}
	}
	return append(dst, idx...)
}

// Holds reports whether the checker at position member is in the k-shard of key: the question
// one checker asks of each check, answered without building the shard.
func (r *Region) Holds(member int, key uint64, k int) bool {
	if member < 0 || member >= len(r.hashes) || k <= 0 {
		return false
	}
	if k >= len(r.hashes) {
		return true
	}
	mine := score(r.hashes[member], key)
	above := 0
	for i, h := range r.hashes {
		s := score(h, key)
		if s > mine || (s == mine && i < member) {
			above++
			if above >= k {
				return false
			}
		}
	}
	return true
}
