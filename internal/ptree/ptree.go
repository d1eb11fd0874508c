// Package ptree is a persistent sorted map: a B+tree whose versions share every node they have
// in common. A write costs O(log n) and leaves every earlier version intact. The control plane
// stores its configuration in such maps, and a DNS location indexes its record sets by check
// in one, so that a change costs what it changes.
package ptree

import (
	"iter"
	"slices"
	"sort"
)

// treeMax is the most entries a node of a tree holds; a node that falls under treeMin is
// merged with a neighbour.
const (
	treeMax = 32
	treeMin = treeMax / 4
)

// Map is a persistent sorted map from string keys to values: a B+tree whose nodes are never
// changed once a version that holds them is published. A write copies only the path from the
// root to the leaf it changes (about log32(n) nodes of at most 32 entries), so one write costs
// O(log n) whatever the size, every earlier version stays valid, and versions share all the
// nodes they have in common. The zero tree is empty.
//
// Writes take an edit token: nodes made under the same token are changed in place, so a batch
// of writes under one token copies each shared node once. A token must not be used again once
// a tree made with it is visible to readers.
type Map[V any] struct {
	root *tnode[V]
	size int
}

// Token marks the nodes one batch of writes made; its address is its identity. Make one
// with new(Token) for each batch.
type Token struct{ _ byte }

// tnode is a leaf (kids nil: keys and vals are its entries) or an inner node (keys[i] is the
// least key under kids[i]).
type tnode[V any] struct {
	owner *Token
	keys  []string
	vals  []V
	kids  []*tnode[V]
}

func (n *tnode[V]) leaf() bool { return n.kids == nil }

// Len returns the number of entries.
func (t Map[V]) Len() int { return t.size }

// Get returns the value of key k.
func (t Map[V]) Get(k string) (V, bool) {
	n := t.root
	for n != nil && !n.leaf() {
		n = n.kids[childFor(n.keys, k)]
	}
	if n != nil {
		if i, ok := slices.BinarySearch(n.keys, k); ok {
			return n.vals[i], true
		}
	}
	var zero V
	return zero, false
}

// childFor returns the kid of an inner node whose range holds k: the last whose least key is
// at most k, or the first.
func childFor(keys []string, k string) int {
	i := sort.Search(len(keys), func(i int) bool { return keys[i] > k })
	return max(i-1, 0)
}

// mutable returns n itself when tok made it, else a copy owned by tok.
func (n *tnode[V]) mutable(tok *Token) *tnode[V] {
	if tok != nil && n.owner == tok {
		return n
	}
	c := &tnode[V]{owner: tok, keys: slices.Clone(n.keys)}
	if n.leaf() {
		c.vals = slices.Clone(n.vals)
	} else {
		c.kids = slices.Clone(n.kids)
	}
	return c
}

// Set returns the tree with k set to v.
func (t Map[V]) Set(tok *Token, k string, v V) Map[V] {
	if t.root == nil {
		return Map[V]{root: &tnode[V]{owner: tok, keys: []string{k}, vals: []V{v}}, size: 1}
	}
	root, split, added := t.root.set(tok, k, v)
	if split != nil {
		root = &tnode[V]{owner: tok, keys: []string{root.keys[0], split.keys[0]}, kids: []*tnode[V]{root, split}}
	}
	if added {
		t.size++
	}
	t.root = root
	return t
}

// set puts k in the subtree of n and returns its new root, the node split off to its right
// when it overflowed, and whether k is new.
func (n *tnode[V]) set(tok *Token, k string, v V) (*tnode[V], *tnode[V], bool) {
	m := n.mutable(tok)
	if m.leaf() {
		i, found := slices.BinarySearch(m.keys, k)
		if found {
			m.vals[i] = v
			return m, nil, false
		}
		m.keys = slices.Insert(m.keys, i, k)
		m.vals = slices.Insert(m.vals, i, v)
		return m, m.split(tok, i == len(m.keys)-1), true
	}
	i := childFor(m.keys, k)
	kid, split, added := m.kids[i].set(tok, k, v)
	m.kids[i], m.keys[i] = kid, kid.keys[0]
	if split != nil {
		m.kids = slices.Insert(m.kids, i+1, split)
		m.keys = slices.Insert(m.keys, i+1, split.keys[0])
	}
	return m, m.split(tok, split != nil && i+1 == len(m.kids)-1), added
}

// split moves the upper part of an overfull node (which tok owns) into a new node and
// returns it; nil when the node is not overfull. When the last entry was just appended (keys
// written in order) only it moves, so that nodes filled in order stay full.
func (n *tnode[V]) split(tok *Token, appended bool) *tnode[V] {
	if len(n.keys) <= treeMax {
		return nil
	}
	at := len(n.keys) / 2
	if appended {
		at = len(n.keys) - 1
	}
	// Both halves get arrays of their own size: the array the node grew into holds twice
	// its entries (append doubles it), the rest of which would stay empty.
	r := &tnode[V]{owner: tok, keys: slices.Clone(n.keys[at:])}
	n.keys = slices.Clone(n.keys[:at])
	if n.leaf() {
		r.vals = slices.Clone(n.vals[at:])
		n.vals = slices.Clone(n.vals[:at])
	} else {
		r.kids = slices.Clone(n.kids[at:])
		n.kids = slices.Clone(n.kids[:at])
	}
	return r
}

// Delete returns the tree without k, and whether k was there.
func (t Map[V]) Delete(tok *Token, k string) (Map[V], bool) {
	if t.root == nil {
		return t, false
	}
	root, found := t.root.del(tok, k)
	if !found {
		return t, false
	}
	for root != nil && !root.leaf() && len(root.kids) == 1 {
		root = root.kids[0]
	}
	if root != nil && len(root.keys) == 0 {
		root = nil
	}
	return Map[V]{root: root, size: t.size - 1}, true
}

// del removes k from the subtree of n and returns its new root; an unchanged subtree is
// returned as it was (not copied).
func (n *tnode[V]) del(tok *Token, k string) (*tnode[V], bool) {
	if n.leaf() {
		i, found := slices.BinarySearch(n.keys, k)
		if !found {
			return n, false
		}
		m := n.mutable(tok)
		m.keys = slices.Delete(m.keys, i, i+1)
		m.vals = slices.Delete(m.vals, i, i+1)
		return m, true
	}
	i := childFor(n.keys, k)
	kid, found := n.kids[i].del(tok, k)
	if !found {
		return n, false
	}
	m := n.mutable(tok)
	m.kids[i] = kid
	switch {
	case len(kid.keys) == 0:
		m.kids = slices.Delete(m.kids, i, i+1)
		m.keys = slices.Delete(m.keys, i, i+1)
	case len(kid.keys) < treeMin && len(m.kids) > 1:
		m.keys[i] = kid.keys[0]
		m.rebalance(tok, i)
	default:
		m.keys[i] = kid.keys[0]
	}
	return m, true
}

// rebalance merges the underfull kid i of n (which tok owns) with a neighbour, splitting the
// result again when it is too large for one node.
func (n *tnode[V]) rebalance(tok *Token, i int) {
	l := i
	if l == len(n.kids)-1 {
		l--
	}
	left, right := n.kids[l].mutable(tok), n.kids[l+1]
	left.keys = append(left.keys, right.keys...)
	if left.leaf() {
		left.vals = append(left.vals, right.vals...)
	} else {
		left.kids = append(left.kids, right.kids...)
	}
	n.kids[l] = left
	n.kids = slices.Delete(n.kids, l+1, l+2)
	n.keys = slices.Delete(n.keys, l+1, l+2)
	if r := left.split(tok, false); r != nil {
		n.kids = slices.Insert(n.kids, l+1, r)
		n.keys = slices.Insert(n.keys, l+1, r.keys[0])
	}
}

// All returns the entries with keys at or after from, in key order.
func (t Map[V]) All(from string) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if t.root != nil {
			t.root.ascend(from, yield)
		}
	}
}

// Prefix returns the entries whose keys start with prefix, in key order.
func (t Map[V]) Prefix(prefix string) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		for k, v := range t.All(prefix) {
			if len(k) < len(prefix) || k[:len(prefix)] != prefix || !yield(k, v) {
				return
			}
		}
	}
}

func (n *tnode[V]) ascend(from string, yield func(string, V) bool) bool {
	if n.leaf() {
		i, _ := slices.BinarySearch(n.keys, from)
		for ; i < len(n.keys); i++ {
			if !yield(n.keys[i], n.vals[i]) {
				return false
			}
		}
		return true
	}
	for i := childFor(n.keys, from); i < len(n.kids); i++ {
		if !n.kids[i].ascend(from, yield) {
			return false
		}
	}
	return true
}
