package shard

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/internal/keyindex"
	"github.com/vigil-dns/vigil/internal/slots"
)

// ErrFleetFull is returned by Allocate when no shard of the fleet fits the overlap limit
// among the zones already allocated.
var ErrFleetFull = errors.New("shard: no name-server shard left within the overlap limit")

// Limits of the stateful allocator's search for one zone.
const (
	// maxAttempts is how many pseudo-random candidates Allocate tries before it gives up on
	// a large fleet.
	maxAttempts = 1024
	// exhaustiveLimit is the most combinations Allocate enumerates, after its random
	// candidates, on a small fleet where the limit can be reached.
	exhaustiveLimit = 1 << 20
)

// Allocator assigns name-server shards to zones so that no two zones share more than the
// overlap limit m of their servers. Two shards share more than m servers exactly when some
// (m+1)-subset of servers belongs to both, so the allocator keeps one set of packed subsets:
// C(shard size, m+1) 64-bit words per zone, 4 with Route 53's 4 servers and limit 2.
//
// Allocation is deterministic given the same sequence of operations: a zone's candidates are
// derived from its name, the first being its stateless shard, and the first that fits wins.
// Stored allocations are loaded back with Restore, in any order. An Allocator is not safe for
// concurrent use; the control plane applies its log in order.
type Allocator struct {
	ns      *NameServers
	subset  int               // m+1 servers per packed subset; 0 when every shard fits
	width   uint              // bits per server in a packed subset
	used    wordSet           // packed subsets held by some zone
	zones   *keyindex.Index   // canonical zone name -> slot, by names[slot]
	names   []string          // slot -> zone name, "" when free
	servers []uint16          // slot -> its shard, ShardSize entries per slot
	free    slots.Free[int32] // the slots of names and servers
	keys    []uint64          // scratch: the subsets of one candidate
}

// NewAllocator returns an empty stateful allocator for the fleet, whatever the fleet's mode.
func (n *NameServers) NewAllocator() (*Allocator, error) {
	a := &Allocator{ns: n, width: uint(n.subsetBits())}
	a.zones = keyindex.New(func(slot int32) string { return a.names[slot] })
	if n.maxOverlap < n.shardSize {
		a.subset = n.maxOverlap + 1
		if a.subset*int(a.width) > 64 {
			return nil, fmt.Errorf("shard: max_overlap %d with a fleet of %d: %d servers of %d bits do not pack in 64 bits",
				n.maxOverlap, n.fleet, a.subset, a.width)
		}
	}
	return a, nil
}

// Len returns the number of zones allocated.
func (a *Allocator) Len() int { return a.zones.Len() }

// Subsets returns the number of packed server subsets held: the allocator's main memory, 11
// to 21 bytes each.
func (a *Allocator) Subsets() int { return a.used.n }

// Servers returns the zone's name servers, sorted, and whether it has any.
func (a *Allocator) Servers(zone string) ([]int, bool) {
	name := CanonicalName(zone)
	slot, ok := a.zones.Get(name)
	if !ok {
		return nil, false
	}
	return a.shardOf(slot), true
}

// All yields every allocated zone with its servers, in slot order (the order of allocation
// when nothing was released).
func (a *Allocator) All() iter.Seq2[string, []int] {
	return func(yield func(string, []int) bool) {
		for slot, name := range a.names {
			if name != "" && !yield(name, a.shardOf(int32(slot))) {
				return
			}
		}
	}
}

// Allocate returns the zone's name servers, allocating them when it has none: the first of
// its candidates that shares at most the overlap limit with every other zone. It returns
// ErrFleetFull when none is found.
func (a *Allocator) Allocate(zone string) ([]int, error) {
	name := CanonicalName(zone)
	if err := checkZoneName(name); err != nil {
		return nil, fmt.Errorf("shard: allocate: %w", err)
	}
	if slot, ok := a.zones.Get(name); ok {
		return a.shardOf(slot), nil
	}
	h := HashKey(name)
	for attempt := range maxAttempts {
		c := a.ns.candidate(h, attempt)
		if a.fits(c) {
			a.commit(name, c)
			return c, nil
		}
	}
	if c := a.search(); c != nil {
		a.commit(name, c)
		return c, nil
	}
	return nil, fmt.Errorf("shard: allocate %s: %w", name, ErrFleetFull)
}

// Restore records a stored allocation. It checks the servers and the overlap limit against
// every zone already held and changes nothing when they fail; restoring a zone with the same
// servers again is a no-op.
func (a *Allocator) Restore(zone string, servers []int) error {
	name := CanonicalName(zone)
	if err := checkZoneName(name); err != nil {
		return fmt.Errorf("shard: restore: %w", err)
	}
	c := slices.Clone(servers)
	slices.Sort(c)
	if len(c) != a.ns.shardSize {
		return fmt.Errorf("shard: restore %s: %d name servers, want %d", name, len(c), a.ns.shardSize)
	}
	for i, s := range c {
		if s < 0 || s >= a.ns.fleet {
			return fmt.Errorf("shard: restore %s: name server %d outside the fleet 0 to %d", name, s, a.ns.fleet-1)
		}
		if i > 0 && c[i-1] == s {
			return fmt.Errorf("shard: restore %s: name server %d repeated", name, s)
		}
	}
	if slot, ok := a.zones.Get(name); ok {
		if slices.Equal(a.shardOf(slot), c) {
			return nil
		}
		return fmt.Errorf("shard: restore %s: already holds %v, not %v", name, a.shardOf(slot), c)
	}
	if !a.fits(c) {
		return fmt.Errorf("shard: restore %s: %v shares more than %d name servers with zone %s",
			name, c, a.ns.maxOverlap, a.conflict(c))
	}
	a.commit(name, c)
	return nil
}

// Release forgets a zone's allocation, freeing its servers for others, and reports whether it
// had one.
func (a *Allocator) Release(zone string) bool {
	name := CanonicalName(zone)
	slot, ok := a.zones.Delete(name)
	if !ok {
		return false
	}
	for _, k := range a.subsets(a.shardOf(slot)) {
		a.used.remove(k)
	}
	a.names[slot] = ""
	a.free.Release(slot)
	return true
}

// checkZoneName rejects a canonical name that is not a zone: the root, or one with an empty
// label.
func checkZoneName(name string) error {
	if name == "." {
		return errors.New("empty zone name")
	}
	if strings.Contains(name, "..") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("zone name %q has an empty label", name)
	}
	return nil
}

// fits reports whether shard c (sorted) shares at most the limit with every zone held.
func (a *Allocator) fits(c []int) bool {
	for _, k := range a.subsets(c) {
		if a.used.has(k) {
			return false
		}
	}
	return true
}

// commit records shard c (sorted) for a zone that has none.
func (a *Allocator) commit(name string, c []int) {
	for _, k := range a.subsets(c) {
		a.used.add(k)
	}
	slot := a.free.Take()
	*slots.Place(&a.names, slot) = name
	base := int(slot) * a.ns.shardSize
	for i, s := range c {
		*slots.Place(&a.servers, base+i) = uint16(s)
	}
	a.zones.Put(name, slot)
}

// shardOf returns a copy of the servers of a slot.
func (a *Allocator) shardOf(slot int32) []int {
	base := int(slot) * a.ns.shardSize
	out := make([]int, a.ns.shardSize)
	for i := range out {
		out[i] = int(a.servers[base+i])
	}
	return out
}

// subsets returns the packed (m+1)-subsets of shard c (sorted), in the allocator's scratch
// space; none when the limit cannot be exceeded.
func (a *Allocator) subsets(c []int) []uint64 {
	a.keys = a.keys[:0]
	if a.subset == 0 {
		return a.keys
	}
	var pick [64]int
	t := a.subset
	for i := range t {
		pick[i] = i
	}
	for {
		var k uint64
		for i := range t {
			k |= uint64(c[pick[i]]) << (uint(i) * a.width)
		}
		a.keys = append(a.keys, k)
		if !nextCombination(pick[:t], len(c)) {
			return a.keys
		}
	}
}

// nextCombination advances pick, a strictly increasing t-subset of [0, n), to the next in
// lexicographic order, and reports false after the last.
func nextCombination(pick []int, n int) bool {
	t := len(pick)
	i := t - 1
	for i >= 0 && pick[i] == n-t+i {
		i--
	}
	if i < 0 {
		return false
	}
	pick[i]++
	for j := i + 1; j < t; j++ {
		pick[j] = pick[j-1] + 1
	}
	return true
}

// search enumerates every shard of a small fleet in lexicographic order and returns the first
// that fits, or nil; for a fleet too large to enumerate it returns nil at once.
func (a *Allocator) search() []int {
	if binomialAbove(a.ns.fleet, a.ns.shardSize, exhaustiveLimit) {
		return nil
	}
	c := make([]int, a.ns.shardSize)
	for i := range c {
		c[i] = i
	}
	for {
		if a.fits(c) {
			return c
		}
		if !nextCombination(c, a.ns.fleet) {
			return nil
		}
	}
}

// binomialAbove reports whether C(n, k) exceeds limit, without overflow.
func binomialAbove(n, k, limit int) bool {
	c := 1
	for i := range k {
		c = c * (n - i) / (i + 1)
		if c > limit {
			return true
		}
	}
	return false
}

// conflict names a zone that shares more than the limit with shard c, for error messages.
func (a *Allocator) conflict(c []int) string {
	for slot, name := range a.names {
		if name != "" && shared(a.shardOf(int32(slot)), c) > a.ns.maxOverlap {
			return name
		}
	}
	return "(none found)"
}

// shared counts the common elements of two sorted slices.
func shared(x, y []int) int {
	n, i, j := 0, 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] < y[j]:
			i++
		case x[i] > y[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}
