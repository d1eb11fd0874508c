package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// ids returns n distinct ids "prefix-<random>" drawn from rng, so that tests do not depend on
// one lucky naming scheme.
func ids(rng *rand.Rand, prefix string, n int) []string {
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		id := fmt.Sprintf("%s-%08x", prefix, rng.Uint32())
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// shuffled returns a shuffled copy of s.
func shuffled(rng *rand.Rand, s []string) []string {
	c := slices.Clone(s)
	rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
	return c
}

// without returns s without x.
func without(s []string, x string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(v string) bool { return v == x })
}

// loads counts how many of keys' k-shards each member of r holds.
func loads(r *Region, keys []uint64, k int) []int {
	counts := make([]int, r.Len())
	var buf []int32
	for _, key := range keys {
		buf = r.AppendShard(buf[:0], key, k)
		for _, m := range buf {
			counts[m]++
		}
	}
	return counts
}

// spread returns the coefficient of variation (population standard deviation over mean) and
// the max/mean ratio of counts.
func spread(counts []int) (cv, maxOverMean float64) {
	var sum, peak float64
	for _, c := range counts {
		sum += float64(c)
		peak = max(peak, float64(c))
	}
	mean := sum / float64(len(counts))
	var sq float64
	for _, c := range counts {
		d := float64(c) - mean
		sq += d * d
	}
	return math.Sqrt(sq/float64(len(counts))) / mean, peak / mean
}

// hashes returns the key hashes of n synthetic check ids.
func hashes(prefix string, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = HashKey(fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}
