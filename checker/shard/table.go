package shard

// wordSet is a set of 64-bit words in one open-addressing table with linear probing: 8 bytes
// a slot and at most 3/4 of the slots full, so 11 to 21 bytes a word where Go's map takes
// about 38 (measured at 4 million words). Deletion shifts later words back instead of leaving
// tombstones, so a set that churns does not fill up with them.
type wordSet struct {
	slots []uint64 // word+1, 0 when free
	n     int
}

// minSlots is the size of a table's first allocation.
const minSlots = 64

// home returns the first slot to probe for word w (stored as w+1).
func (s *wordSet) home(stored uint64) int {
	return int(mix64(stored) & uint64(len(s.slots)-1))
}

// find returns the slot holding w, or the free slot where the probe for it ended, and whether
// it was found.
func (s *wordSet) find(w uint64) (int, bool) {
	stored := w + 1
	mask := len(s.slots) - 1
	for i := s.home(stored); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case stored:
			return i, true
		case 0:
			return i, false
		}
	}
}

// has reports whether w is in the set.
func (s *wordSet) has(w uint64) bool {
	if s.n == 0 {
		return false
	}
	_, ok := s.find(w)
	return ok
}

// add puts w in the set. w must not be the largest uint64.
func (s *wordSet) add(w uint64) {
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	if i, ok := s.find(w); !ok {
		s.slots[i] = w + 1
		s.n++
	}
}

// remove takes w out of the set and reports whether it was there.
func (s *wordSet) remove(w uint64) bool {
	if s.n == 0 {
		return false
	}
	i, ok := s.find(w)
	if !ok {
		return false
	}
	s.slots[backShift(s.slots, i, s.home)] = 0
	s.n--
	return true
}

// grow doubles the table and reinserts every word.
func (s *wordSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(2*len(old), minSlots))
	reinsert(s.slots, old, s.home)
}

// reinsert puts every non-zero word of old into the empty linear-probing table slots, each
// from its home (which must already reckon with len(slots)).
func reinsert(slots, old []uint64, home func(uint64) int) {
	mask := len(slots) - 1
	for _, w := range old {
		if w == 0 {
			continue
		}
		i := home(w)
		for slots[i] != 0 {
			i = (i + 1) & mask
		}
		slots[i] = w
	}
}

// backShift empties slot i of a linear-probing table by moving back every later word of its
// cluster that may move there (whose home is not cyclically within the gap it would jump),
// and returns the slot left to clear (Knuth's algorithm R).
func backShift(slots []uint64, i int, home func(uint64) int) int {
	mask := len(slots) - 1
	for j := (i + 1) & mask; slots[j] != 0; j = (j + 1) & mask {
		k := home(slots[j])
		// The word at j stays when its home lies cyclically in (i, j].
		if (i <= j && i < k && k <= j) || (i > j && (i < k || k <= j)) {
			continue
		}
		slots[i] = slots[j]
		i = j
	}
	return i
}
