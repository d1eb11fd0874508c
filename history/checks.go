package history

import "github.com/vigil-dns/vigil/internal/keyindex"

// checkTable holds a Store's checks: a slab of checks by place, with the places of checks
// forgotten reused, and an index of their ids (internal/keyindex). A map from id to a check
// allocated apart cost about 120 bytes a check more than its changes at a million checks (the
// map's 56, a check of 64); the slab holds a check in 72 bytes with its first two changes,
// and the index in 5 to 8. The
// table refers to itself (its index names a place's id), so it is not copied once init made
// it.
type checkTable struct {
	list  []check
	free  []int32
	index *keyindex.Index
}

// init makes t empty.
func (t *checkTable) init() {
	*t = checkTable{}
	t.index = keyindex.New(func(i int32) string { return t.list[i].id })
}

// get returns check id, or nil. The check is valid until the next add.
func (t *checkTable) get(id string) *check {
	if i, ok := t.index.Get(id); ok {
		return &t.list[i]
	}
	return nil
}

// add adds check id, which t does not hold, and returns it. It is valid until the next add.
func (t *checkTable) add(id string) *check {
	var i int32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = int32(len(t.list))
		t.list = append(t.list, check{})
	}
	t.list[i] = check{id: id}
	t.index.Put(id, i)
	return &t.list[i]
}

// remove forgets check id, if t holds it.
func (t *checkTable) remove(id string) {
	if i, ok := t.index.Delete(id); ok {
		t.list[i] = check{}
		t.free = append(t.free, i)
	}
}

// len returns how many checks t holds.
func (t *checkTable) len() int { return t.index.Len() }

// all yields every check t holds, in no order.
func (t *checkTable) all(yield func(*check) bool) {
	for i := range t.list {
		if c := &t.list[i]; (c.n > 0 || c.ring != nil) && !yield(c) {
			return
		}
	}
}
