package shard

import "math/bits"

// FNV-1a 64-bit parameters.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	// golden is the splitmix64 increment: 2^64 divided by the golden ratio.
	golden = 0x9e3779b97f4a7c15
)

// hashString returns a well-mixed 64-bit hash of s: FNV-1a followed by the splitmix64
// finaliser, so that ids differing in one character differ in about half of the bits. It is
// the same on every node and in every process, which Go's maphash is not.
func hashString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return mix64(h)
}

// mix64 is the splitmix64 finaliser: a bijection on 64-bit words with full avalanche.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// score is the rendezvous weight of one (member, key) pair, both already hashed: a few
// nanoseconds per pair.
func score(member, key uint64) uint64 { return mix64(member ^ key) }

// stream is a splitmix64 generator: a deterministic sequence of 64-bit words from one seed.
type stream struct{ state uint64 }

// next returns the stream's next word.
func (s *stream) next() uint64 {
	s.state += golden
	return mix64(s.state)
}

// below returns a number in [0, n) from the stream by the multiply-high method. Its bias is
// at most n/2^64, far below anything measurable for the fleet sizes used here.
func (s *stream) below(n int) int {
	hi, _ := bits.Mul64(s.next(), uint64(n))
	return int(hi)
}
