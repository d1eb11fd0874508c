package shard

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// Any string given as a name-server host name either names a server of the fleet, whose name
// it then is (up to case and the final dot), or is refused; it never panics.
func FuzzNameServerIndex(f *testing.F) {
	for _, s := range []string{"ns-0.ns.vigil.test.", "NS-2047.ns.vigil.test", "ns-2048.ns.vigil.test.", "ns-.", "", ".", "ns-1..", "ns-00.ns.vigil.test."} {
		f.Add(s)
	}
	n, err := NewNameServers(config.DefaultDocument().NameServers)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string) {
		i, err := n.Index(name)
		if err != nil {
			return
		}
		if i < 0 || i >= n.Fleet() || n.Name(i) != CanonicalName(name) {
			t.Fatalf("Index(%q) = %d, named %q", name, i, n.Name(i))
		}
	})
}

// Stored allocations read back from anywhere either restore, keeping the guarantee, or are
// refused with nothing changed; they never panic.
func FuzzAllocatorRestore(f *testing.F) {
	f.Add("a.example.", []byte{1, 0, 2, 0, 3, 0, 4, 0}, []byte{1, 0, 2, 0, 3, 0, 5, 0})
	f.Add("", []byte{}, []byte{255, 255, 0, 0, 1, 0, 2, 0})
	f.Add("b..", []byte{9, 0, 9, 0, 9, 0, 9, 0}, []byte{7})
	f.Fuzz(func(t *testing.T, zone string, first, second []byte) {
		n, err := NewNameServers(settings(40, 4, 2))
		if err != nil {
			t.Fatal(err)
		}
		a, err := n.NewAllocator()
		if err != nil {
			t.Fatal(err)
		}
		decode := func(b []byte) []int {
			var out []int
			for len(b) >= 2 {
				out = append(out, int(int16(binary.LittleEndian.Uint16(b))))
				b = b[2:]
			}
			return out
		}
		for i, servers := range [][]int{decode(first), decode(second)} {
			name := zone + string(rune('a'+i))
			before, subsets := a.Len(), a.Subsets()
			if err := a.Restore(name, servers); err != nil {
				if a.Len() != before || a.Subsets() != subsets {
					t.Fatalf("refused restore changed the allocator: %v", err)
				}
				continue
			}
			got, ok := a.Servers(name)
			if !ok || !slices.Equal(got, slices.Sorted(slices.Values(servers))) {
				t.Fatalf("restored %v, holds %v", servers, got)
			}
		}
		var shards [][]int
		for _, s := range a.All() {
			shards = append(shards, s)
		}
		if most, _, _ := worstPair(shards); most > 2 {
			t.Fatalf("restored shards %v share %d", shards, most)
		}
	})
}
