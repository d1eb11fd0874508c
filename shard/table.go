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

// zoneIndex maps zone names to allocator slots in one open-addressing table: each entry is
// the low 32 bits of the name's hash above the slot number plus one, so a probe compares
// names only when the hashes agree. 8 bytes a slot, at most 3/4 full.
type zoneIndex struct {
	slots []uint64
	n     int
}

// home returns the first slot to probe for an entry, from the hash bits it carries.
func (x *zoneIndex) home(entry uint64) int {
	return int((entry >> 32) & uint64(len(x.slots)-1))
}

// find returns the position in the table of name, whose hash is h, with names giving each
// allocator slot's name; or the free position where the probe ended.
func (x *zoneIndex) find(name string, h uint64, names []string) (int, bool) {
	if len(x.slots) == 0 {
		return -1, false
	}
	tag := h & 0xffffffff
	mask := len(x.slots) - 1
	for i := int(tag) & mask; ; i = (i + 1) & mask {
		e := x.slots[i]
		if e == 0 {
			return i, false
		}
		if e>>32 == tag && names[uint32(e)-1] == name {
			return i, true
		}
	}
}

// get returns the allocator slot of name.
func (x *zoneIndex) get(name string, h uint64, names []string) (int32, bool) {
	i, ok := x.find(name, h, names)
	if !ok {
		return 0, false
	}
	return int32(uint32(x.slots[i]) - 1), true
}

// put records name (hash h, not present) at allocator slot.
func (x *zoneIndex) put(name string, h uint64, slot int32, names []string) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
	}
	i, _ := x.find(name, h, names)
	x.slots[i] = (h&0xffffffff)<<32 | uint64(slot+1)
	x.n++
}

// del removes name (hash h) and reports whether it was there.
func (x *zoneIndex) del(name string, h uint64, names []string) bool {
	i, ok := x.find(name, h, names)
	if !ok {
		return false
	}
	x.slots[backShift(x.slots, i, x.home)] = 0
	x.n--
	return true
}

// grow doubles the table and reinserts every entry.
func (x *zoneIndex) grow() {
	old := x.slots
	x.slots = make([]uint64, max(2*len(old), minSlots))
	reinsert(x.slots, old, x.home)
}
