package state

import (
	"fmt"
	"maps"
	"slices"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
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

// ShardKeeper holds the allocator of the state machine and keeps it, and the shards the
// state stores, in step with each edit. It is used only from raft's apply goroutine (Apply
// and Restore).
type ShardKeeper struct {
	Factory  AllocatorFactory
	alloc    Allocator
	settings config.NameServerSettings
}

// stateful reports whether zones of a state with these settings get stored shards.
func (k *ShardKeeper) stateful(ns config.NameServerSettings) bool {
	return k.Factory != nil && ns.Mode == "stateful"
}

// Update gives the zones the edit added a shard and releases those of the zones it removed;
// a change of name-server settings allocates every zone's shard again. On error the
// allocator and the edit's shards are as they were.
func (k *ShardKeeper) Update(e *Edit) error {
	ns := e.Next.settings.NameServers
	if k.alloc == nil || ns != k.settings {
		return k.rebuild(e)
	}
	if !k.stateful(ns) {
		return nil
	}
	var added, released []string
	undo := func() {
		for _, z := range added {
			k.alloc.Release(z)
		}
		for _, z := range released {
			_ = k.alloc.Restore(z, e.base.Shard(z))
		}
	}
	for _, apex := range slices.Sorted(maps.Keys(e.zones)) {
		_, exists := e.Next.zones.Get(apex)
		_, has := e.Next.shards.Get(apex)
		switch {
		case exists && !has:
			servers, err := k.alloc.Allocate(apex)
			if err != nil {
				undo()
				return fmt.Errorf("control: name-server shard of zone %q: %w", apex, err)
			}
			added = append(added, apex)
			e.setShard(apex, servers)
		case !exists && has:
			k.alloc.Release(apex)
			released = append(released, apex)
			e.setShard(apex, nil)
		}
	}
	return nil
}

// rebuild makes a new allocator for the edit's settings and allocates every zone's shard in
// order of apex.
func (k *ShardKeeper) rebuild(e *Edit) error {
	ns := e.Next.settings.NameServers
	want := map[string][]int{}
	var a Allocator
	if k.stateful(ns) && e.Next.zones.Len() > 0 {
		var err error
		if a, err = k.Factory(ns); err != nil {
			return fmt.Errorf("control: name-server allocator: %w", err)
		}
		for apex := range e.Next.zones.All("") {
			servers, err := a.Allocate(apex)
			if err != nil {
				return fmt.Errorf("control: name-server shard of zone %q: %w", apex, err)
			}
			want[apex] = servers
		}
	}
	var gone []string
	for apex := range e.Next.shards.All("") {
		if _, ok := want[apex]; !ok {
			gone = append(gone, apex)
		}
	}
	for _, apex := range gone {
		e.setShard(apex, nil)
	}
	for _, apex := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(e.base.Shard(apex), want[apex]) {
			e.setShard(apex, want[apex])
		}
	}
	k.alloc, k.settings = a, ns
	return nil
}

// Restore rebuilds the allocator from a restored state's shards.
func (k *ShardKeeper) Restore(s *State) error {
	k.alloc, k.settings = nil, s.settings.NameServers
	if !k.stateful(s.settings.NameServers) || s.shards.Len() == 0 {
		return nil
	}
	a, err := k.Factory(s.settings.NameServers)
	if err != nil {
		return fmt.Errorf("control: name-server allocator: %w", err)
	}
	for apex, servers := range s.shards.All("") {
		if err := a.Restore(apex, servers); err != nil {
			return fmt.Errorf("control: restore name-server shard of zone %q: %w", apex, err)
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
