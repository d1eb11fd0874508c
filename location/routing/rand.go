package routing

import "math/bits"

// stream is a splitmix64 generator: it turns one 64-bit draw per query into as many
// well-mixed values as a selection needs, so that callers may pass any uint64 (a counter, a
// hash) and still get uniform choices.
type stream uint64

// next returns the stream's next value.
func (s *stream) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a value in [0, n) for n > 0: the high word of x·n (Lemire's reduction). Its
// bias is at most n/2^64, far below anything a test or a resolver could observe.
func below(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}
