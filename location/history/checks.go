package history

import (
	"github.com/vigil-dns/vigil/internal/keyindex"
	"github.com/vigil-dns/vigil/internal/slots"
)

// checkTable holds a Store's checks: a slab of checks by place, with the places of checks
// forgotten reused, and an index of their ids (internal/keyindex). A map from id to a check
// allocated apart cost about 120 bytes a check more than its changes at a million checks (the
// map's 56, a check of 64); the slab holds a check in 72 bytes with its first two changes,
// and the index in 5 to 8. The
// table refers to itself (its index names a place's id), so it is not copied once init made
// it.
type checkTable struct {
	list  []check
	free  slots.Free[int32]
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
	i := t.free.Take()
	c := slots.Place(&t.list, i)
	*c = check{id: id}
	t.index.Put(id, i)
	return c
}

// remove forgets check id, if t holds it.
func (t *checkTable) remove(id string) {
	if i, ok := t.index.Delete(id); ok {
		t.list[i] = check{}
		t.free.Release(i)
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

// check is one check in memory, in a checkTable: about 1.2 KB with 16 changes and more
// (measured by BenchmarkMemory), 72 bytes with one or two (held in the check; its buckets are
// not held until its ring of changes is full). Its state, and since when, are its latest
// change's.
type check struct {
	id string
	// b accounts the check's time since its first verdict; nil while the changes held are
	// every change since then (the ring has not come round), which say as much with the gaps:
	// most checks of a large configuration change once or twice (unknown, then healthy), and
	// a week of buckets is about 800 bytes.
	b *buckets
	// The changes (see events): the first ones in first, then in a ring of their own.
	ring  *[]event
	first [2]event
	head  int32 // next place in the changes once full
	n     uint8 // changes held in first while ring is nil
}

// latest returns c's latest change; a check held has one (the zero event, of no state, while
// its place is free).
func (c *check) latest() event {
	evs := c.events()
	if len(evs) == 0 {
		return event{}
	}
	return evs[(int(c.head)-1+len(evs))%len(evs)]
}

// state returns c's state code now: its latest change's.
func (c *check) state() uint8 { return c.latest().to() }

// events returns the changes c holds, in the order they were placed (oldest first until the
// ring is full; then the oldest is at head). It aliases c.
func (c *check) events() []event {
	if c.ring != nil {
		return *c.ring
	}
	return c.first[:c.n]
}

// addEvent places change e among c's, at most limit of them: appended while fewer, else in
// place of the oldest.
func (c *check) addEvent(e event, limit int) {
	evs := c.events()
	if len(evs) >= limit {
		evs[c.head] = e
		c.head = (c.head + 1) % int32(len(evs))
		return
	}
	if c.ring == nil && len(evs) < len(c.first) {
		c.first[c.n] = e
		c.n++
		return
	}
	if len(evs) == cap(evs) {
		evs = append(make([]event, 0, min(max(2*len(evs), 4), limit)), evs...)
	}
	evs = append(evs, e)
	if c.ring == nil {
		c.ring, c.first, c.n = new([]event), [2]event{}, 0
	}
	*c.ring = evs
}

// event is a verdict change in memory: 16 bytes.
type event struct {
	stamp                            int64 // unix ms << 4 | from << 2 | to
	healthy, unhealthy, fresh, stale uint16
}

// newEvent packs a change at unix ms at from state code from to to. A time in ms must be
// within ±2^59 (±18 million years).
func newEvent(at int64, from, to uint8) event {
	return event{stamp: at<<4 | int64(from&3)<<2 | int64(to&3)}
}

// at returns the change's time, unix ms.
func (e event) at() int64 { return e.stamp >> 4 }

// from and to return the states' codes before and after the change.
func (e event) from() uint8 { return uint8(e.stamp>>2) & 3 }
func (e event) to() uint8   { return uint8(e.stamp) & 3 }
