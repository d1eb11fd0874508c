package ptree

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkTree compares a tree with a map, entry by entry and in order, and checks the B+tree's
// shape: every inner key the least key of its kid, no node above treeMax entries.
func checkTree(t *testing.T, tr Map[int], want map[string]int) {
	t.Helper()
	if tr.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", tr.Len(), len(want))
	}
	keys := slices.Sorted(maps.Keys(want))
	i := 0
	for k, v := range tr.All("") {
		if i >= len(keys) || k != keys[i] || v != want[k] {
			t.Fatalf("entry %d = %s:%d, want %v", i, k, v, keys[min(i, len(keys)-1)])
		}
		i++
	}
	if i != len(keys) {
		t.Fatalf("iterated %d entries, want %d", i, len(keys))
	}
	for _, k := range keys {
		if v, ok := tr.Get(k); !ok || v != want[k] {
			t.Fatalf("Get(%s) = %d %v, want %d", k, v, ok, want[k])
		}
	}
	var walk func(n *tnode[int]) string
	walk = func(n *tnode[int]) string {
		if len(n.keys) > treeMax || len(n.keys) == 0 {
			t.Fatalf("node of %d entries", len(n.keys))
		}
		if n.leaf() {
			if !slices.IsSorted(n.keys) || len(n.vals) != len(n.keys) {
				t.Fatalf("bad leaf %v", n.keys)
			}
			return n.keys[0]
		}
		for j, kid := range n.kids {
			if least := walk(kid); least != n.keys[j] {
				t.Fatalf("inner key %q, least key below %q", n.keys[j], least)
			}
		}
		return n.keys[0]
	}
	if tr.root != nil {
		walk(tr.root)
	}
}

// TestTreeAgainstMap applies random sets and deletes, with and without edit tokens, and
// checks after each batch that the tree equals a map, and that every earlier version is
// unchanged by later writes.
func TestTreeAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tr Map[int]
	want := map[string]int{}
	type version struct {
		tr   Map[int]
		want map[string]int
	}
	var versions []version
	for batch := range 300 {
		var tok *Token
		if batch%2 == 0 {
			tok = &Token{}
		}
		n := 1 + rng.IntN(200)
		for range n {
			k := fmt.Sprintf("k%05d", rng.IntN(3000))
			if rng.IntN(3) == 0 {
				var found bool
				tr, found = tr.Delete(tok, k)
				if _, had := want[k]; had != found {
					t.Fatalf("Delete(%s) found=%v, map had=%v", k, found, had)
				}
				delete(want, k)
			} else {
				v := rng.Int()
				tr = tr.Set(tok, k, v)
				want[k] = v
			}
		}
		checkTree(t, tr, want)
		versions = append(versions, version{tr, maps.Clone(want)})
	}
	for _, v := range versions {
		checkTree(t, v.tr, v.want)
	}
	// Delete everything, in random order.
	keys := slices.Collect(maps.Keys(want))
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, k := range keys {
		tr, _ = tr.Delete(nil, k)
		delete(want, k)
	}
	checkTree(t, tr, want)
	if tr.root != nil {
		t.Fatalf("empty tree keeps a root")
	}
}

// TestTreeInOrderFill: keys written in order fill their nodes, so a tree built from a sorted
// stream (a snapshot being restored) is compact.
func TestTreeInOrderFill(t *testing.T) {
	var tr Map[int]
	tok := &Token{}
	const n = 100_000
	for i := range n {
		tr = tr.Set(tok, fmt.Sprintf("c%07d", i), i)
	}
	leaves := 0
	var walk func(*tnode[int])
	walk = func(x *tnode[int]) {
		if x.leaf() {
			leaves++
			return
		}
		for _, k := range x.kids {
			walk(k)
		}
	}
	walk(tr.root)
	if most := n/treeMax + 2; leaves > most {
		t.Fatalf("%d leaves for %d keys written in order, want at most %d", leaves, n, most)
	}
	checkTree(t, tr, func() map[string]int {
		m := map[string]int{}
		for i := range n {
			m[fmt.Sprintf("c%07d", i)] = i
		}
		return m
	}())
}

// TestTreePrefix returns exactly the keys under a prefix, from the middle of the tree.
func TestTreePrefix(t *testing.T) {
	var tr Map[int]
	for i := range 1000 {
		tr = tr.Set(nil, fmt.Sprintf("z%d\x00%04d", i%7, i), i)
	}
	n := 0
	for k := range tr.Prefix("z3\x00") {
		if k[:3] != "z3\x00" {
			t.Fatalf("key %q outside the prefix", k)
		}
		n++
	}
	if n != 143 {
		t.Fatalf("%d keys under the prefix, want 143", n)
	}
}
