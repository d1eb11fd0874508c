// Package slots hands out the places of slices whose elements come and go, reusing a freed
// place before the slices grow.
//
// A table of checks, checkers, interned strings or zones keeps its entries in slices indexed
// by place, so that a million entries are one allocation and cost their bytes alone;
// another structure (an index by key, a list of places) refers to them by place. A Free list
// hands a freed place out again, the last freed first, and Place makes the slices cover it.
// A Free list is not safe for concurrent use.
package slots

// Free hands out places 0, 1, 2, … of the slices of one table, and takes back places freed,
// which it hands out again before new ones, the last freed first. The zero value hands out
// place 0 first.
type Free[I ~int32 | ~uint32] struct {
	free []I
	n    I // places handed out, free now or not
}

// Take returns a place for a new entry: the last one freed, or else the place after every
// place handed out, which the slices of the table do not cover yet (Place covers it).
func (f *Free[I]) Take() I {
	if k := len(f.free); k > 0 {
		i := f.free[k-1]
		f.free = f.free[:k-1]
		return i
	}
	f.n++
	return f.n - 1
}

// Release takes back place i, handed out by Take and not released since. The entry at i
// stays as its table left it until Take hands i out again: a table clears what the entry
// refers to, so that the collector may free it.
func (f *Free[I]) Release(i I) { f.free = append(f.free, i) }

// Places returns how many places were handed out, in use or free: the length of the slices.
func (f *Free[I]) Places() int { return int(f.n) }

// Used returns how many places are in use: handed out and not released.
func (f *Free[I]) Used() int { return int(f.n) - len(f.free) }

// Place returns a pointer to element i of *s, appending a zero element when i is the length
// of *s (a place that Take handed out for the first time). The element is as its table left
// it: zero for a new place, as it was released for a place taken again. The pointer is
// valid until *s grows.
func Place[T any, I ~int | ~int32 | ~uint32](s *[]T, i I) *T {
	if int(i) == len(*s) {
		var zero T
		*s = append(*s, zero)
	}
	return &(*s)[i]
}
