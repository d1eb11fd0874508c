// Package keyindex finds a string key's place in a table its caller keeps. It is an
// open-addressing hash index of int32 places, 4 bytes a slot, that holds no key of its own. A
// location holds a million check ids in several components (the verdict engine, the gossip
// table, the history, the assignment plan), each with its own index from id to place; a Go map
// from string to int32 cost about 56 bytes an entry there (its slots hold the string header,
// and its load after growth), where this index costs 5 to 8 bytes and the caller's table names
// the key of each place.
//
// An Index is not safe for concurrent use.
package keyindex

import (
	"hash/maphash"
	"math/bits"
)

// Index maps string keys to int32 places (0 or more) in a table of its caller's, which names
// the key of a place with the function given to New. Linear probing; a slot holds a place
// plus one in its low bits (0: empty) and, in the bits the places leave free, a tag of the
// key's hash, so that a probe compares the caller's key (a cache miss or two) only when the
// tags match: at a million places the tag has 12 bits. Deletion shifts the entries after the
// hole back, so that no tombstone is left.
type Index struct {
	slots []uint32
	n     int
	bits  uint // low bits of a slot that hold the place plus one; the others hold the tag
	// oldBits is bits as the slots were placed, until resize places them again.
	oldBits uint
	seed    maphash.Seed
	key     func(place int32) string
}

// minBits is how many bits of a slot hold the place plus one at first.
const minBits = 8

// minSlots is the size of a non-empty index's first table.
const minSlots = 8

// New returns an empty index whose places are named by key: key(p) must return the key
// stored at place p for as long as the index holds p.
func New(key func(place int32) string) *Index {
	return &Index{seed: maphash.MakeSeed(), key: key}
}

// Len returns how many keys the index holds.
func (x *Index) Len() int { return x.n }

// Bytes returns the bytes the index's table takes.
func (x *Index) Bytes() int { return 4 * cap(x.slots) }

// home returns the slot where a key of hash h starts probing, in a table of n slots.
func home(h uint64, n int) int { return int((h >> 32) * uint64(n) >> 32) }

func (x *Index) hash(s string) uint64 { return maphash.String(x.seed, s) }

// tag returns the tag of a key of hash h: bits of h that home does not use.
func (x *Index) tag(h uint64) uint32 { return uint32(h) >> x.bits << x.bits }

// place returns the place of a slot's value.
func (x *Index) place(v uint32) int32 { return int32(v&(1<<x.bits-1)) - 1 }

// Get returns key's place.
func (x *Index) Get(key string) (int32, bool) {
	n := len(x.slots)
	if x.n == 0 {
		return -1, false
	}
	h := x.hash(key)
	tag := x.tag(h)
	for i := home(h, n); ; {
		v := x.slots[i]
		if v == 0 {
			return -1, false
		}
		if p := x.place(v); x.tag(uint64(v)) == tag && x.key(p) == key {
			return p, true
		}
		if i++; i == n {
			i = 0
		}
	}
}

// Put sets key's place to p, adding key when the index does not hold it. The caller's table
// must name key at p by then.
func (x *Index) Put(key string, p int32) {
	if p < 0 {
		panic("keyindex: negative place")
	}
	if x.bits == 0 {
		x.bits = minBits
	}
	if need := uint(bits.Len32(uint32(p) + 1)); need > x.bits {
		// The place needs more bits than slots give it: fewer are left for tags.
		x.bits = min(32, max(need, x.bits+4))
		x.resize(len(x.slots))
	}
	if 4*(x.n+1) > 3*len(x.slots) {
		x.resize(max(minSlots, (x.n+1)*2))
	}
	n := len(x.slots)
	h := x.hash(key)
	tag := x.tag(h)
	for i := home(h, n); ; {
		v := x.slots[i]
		if v == 0 {
			x.slots[i] = tag | uint32(p) + 1
			x.n++
			return
		}
		if x.tag(uint64(v)) == tag && x.key(x.place(v)) == key {
			x.slots[i] = tag | uint32(p) + 1
			return
		}
		if i++; i == n {
			i = 0
		}
	}
}

// Delete removes key, if the index holds it, and returns the place it had. The caller's
// table must still name key at that place during the call (and every other key at its own).
func (x *Index) Delete(key string) (int32, bool) {
	n := len(x.slots)
	if x.n == 0 {
		return -1, false
	}
	h := x.hash(key)
	tag := x.tag(h)
	i := home(h, n)
	for {
		v := x.slots[i]
		if v == 0 {
			return -1, false
		}
		if x.tag(uint64(v)) == tag && x.key(x.place(v)) == key {
			break
		}
		if i++; i == n {
			i = 0
		}
	}
	p := x.place(x.slots[i])
	// Shift back the entries after the hole that may not stay past it.
	for j := i; ; {
		if j++; j == n {
			j = 0
		}
		v := x.slots[j]
		if v == 0 {
			break
		}
		h := home(x.hash(x.key(x.place(v))), n)
		// The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
		if i <= j && (h <= i || h > j) || i > j && h <= i && h > j {
			x.slots[i] = v
			i = j
		}
	}
	x.slots[i] = 0
	x.n--
	if x.n == 0 {
		x.slots = nil
	} else if len(x.slots) > minSlots && 8*x.n < len(x.slots) {
		x.resize(x.n * 2)
	}
	return p, true
}

// Reset empties the index.
func (x *Index) Reset() { x.slots, x.n, x.bits, x.oldBits = nil, 0, 0, 0 }

// Reserve makes room for n keys in all without growing again.
func (x *Index) Reserve(n int) {
	if want := (4*n + 2) / 3; want > len(x.slots) {
		x.resize(want)
	}
}

// resize moves every entry into a table of n slots, tagged for x.bits (which may have
// changed since the entries were placed: their places are read with oldBits).
func (x *Index) resize(n int) {
	old, oldBits := x.slots, x.oldBits
	x.oldBits = x.bits
	x.slots = make([]uint32, max(n, minSlots))
	n = len(x.slots)
	for _, v := range old {
		if v == 0 {
			continue
		}
		p := int32(v&(1<<oldBits-1)) - 1
		h := x.hash(x.key(p))
		for i := home(h, n); ; {
			if x.slots[i] == 0 {
				x.slots[i] = x.tag(h) | uint32(p) + 1
				break
			}
			if i++; i == n {
				i = 0
			}
		}
	}
}
