package control

import (
	"fmt"
	"maps"
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/shard"
)

// Allocator gives each zone its name-server shard with the overlap guarantee of stateful
// shuffle sharding. The state machine calls it in raft order on every voter, so it must be
// deterministic: the same calls in the same order give the same shards.
type Allocator interface {
	// Allocate picks the shard of a new zone and remembers it.
	Allocate(zone string) ([]int, error)
	// Restore remembers a shard allocated earlier (from a snapshot).
	Restore(zone string, servers []int) error
	// Release forgets a zone's shard.
	Release(zone string)
}

// AllocatorFactory makes an empty allocator for the name-server settings of a document.
type AllocatorFactory func(config.NameServerSettings) (Allocator, error)

// shardZones returns the canonical names of the zones that need a shard, sorted.
func shardZones(doc *config.Document) []string {
	if doc.NameServers.Mode != "stateful" {
		return nil
	}
	out := make([]string, 0, len(doc.Zones))
	for _, z := range doc.Zones {
		out = append(out, CanonicalZone(z.Name))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// shardKeeper holds the allocator of the state machine and reconciles it with each new
// document. It is used only from raft's apply goroutine (Apply and Restore).
type shardKeeper struct {
	factory  AllocatorFactory
	alloc    Allocator
	settings config.NameServerSettings
}

// reconcile returns the shards of next, given those of prev, allocating for new zones and
// releasing removed ones. On error the allocator is left as it was.
func (k *shardKeeper) reconcile(prev map[string][]int, next *config.Document) (map[string][]int, error) {
	if k.factory == nil {
		return nil, nil
	}
	want := shardZones(next)
	if k.alloc == nil || next.NameServers != k.settings {
		if len(want) == 0 {
			k.alloc, k.settings = nil, next.NameServers
			return nil, nil
		}
		a, err := k.factory(next.NameServers)
		if err != nil {
			return nil, fmt.Errorf("control: name-server allocator: %w", err)
		}
		out := make(map[string][]int, len(want))
		for _, z := range want {
			s, err := a.Allocate(z)
			if err != nil {
				return nil, fmt.Errorf("control: name-server shard of zone %q: %w", z, err)
			}
			out[z] = s
		}
		k.alloc, k.settings = a, next.NameServers
		return out, nil
	}
	out := maps.Clone(prev)
	if out == nil {
		out = map[string][]int{}
	}
	released := map[string][]int{}
	for _, z := range slices.Sorted(maps.Keys(prev)) {
		if !slices.Contains(want, z) {
			k.alloc.Release(z)
			released[z] = prev[z]
			delete(out, z)
		}
	}
	var added []string
	for _, z := range want {
		if _, ok := out[z]; ok {
			continue
		}
		s, err := k.alloc.Allocate(z)
		if err != nil {
			for _, a := range added {
				k.alloc.Release(a)
			}
			for _, r := range slices.Sorted(maps.Keys(released)) {
				_ = k.alloc.Restore(r, released[r])
			}
			return nil, fmt.Errorf("control: name-server shard of zone %q: %w", z, err)
		}
		added = append(added, z)
		out[z] = s
	}
	return out, nil
}

// restore rebuilds the allocator from a snapshot's shards.
func (k *shardKeeper) restore(doc *config.Document, shards map[string][]int) error {
	k.alloc, k.settings = nil, doc.NameServers
	if k.factory == nil || len(shards) == 0 {
		return nil
	}
	a, err := k.factory(doc.NameServers)
	if err != nil {
		return fmt.Errorf("control: name-server allocator: %w", err)
	}
	for _, z := range slices.Sorted(maps.Keys(shards)) {
		if err := a.Restore(z, shards[z]); err != nil {
			return fmt.Errorf("control: restore name-server shard of zone %q: %w", z, err)
		}
	}
	k.alloc = a
	return nil
}

// ShardAllocators is the allocator factory voters use unless told otherwise: the stateful
// allocator of package shard, which guarantees that no two zones share more than the
// configured overlap of their name servers.
func ShardAllocators(s config.NameServerSettings) (Allocator, error) {
	ns, err := shard.NewNameServers(s)
	if err != nil {
		return nil, err
	}
	a, err := ns.NewAllocator()
	if err != nil {
		return nil, err
	}
	return shardAllocator{a}, nil
}

// shardAllocator adapts *shard.Allocator to Allocator.
type shardAllocator struct{ *shard.Allocator }

// Release forgets the zone's shard.
func (s shardAllocator) Release(zone string) { s.Allocator.Release(zone) }
