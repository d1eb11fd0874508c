package verdict

import (
	"math"
	"time"
)

// never is the stamp of the zero time.
const never = math.MinInt64

// clock turns times into int64 stamps (nanoseconds from the first non-zero time it saw) and
// back, so that the engine's state holds no time.Time (and no pointer). A time that went in
// with a monotonic reading comes back with one.
type clock struct {
	epoch time.Time
	set   bool
}

func (c *clock) stamp(t time.Time) int64 {
	if t.IsZero() {
		return never
	}
	if !c.set {
		c.epoch, c.set = t, true
	}
	return int64(t.Sub(c.epoch))
}

func (c *clock) time(s int64) time.Time {
	if s == never {
		return time.Time{}
	}
	return c.epoch.Add(time.Duration(s))
}

// entry is one timer: what falls due (a checker or a check) and when.
type entry struct {
	at  int64
	id  int32
	gen uint32 // a checker's generation: entries of a freed checker are ignored
}

// timers is a min-heap of entries by due time. With pos set, it tracks each id's place so
// that an id holds at most one entry that can be moved or removed (held checks); without,
// entries are only pushed and popped (checkers, moved lazily).
type timers struct {
	h   []entry
	pos func(id int32) *int32
}

func (t *timers) len() int { return len(t.h) }

// next returns the earliest entry.
func (t *timers) next() (entry, bool) {
	if len(t.h) == 0 {
		return entry{}, false
	}
	return t.h[0], true
}

func (t *timers) push(e entry) {
	t.h = append(t.h, e)
	t.setPos(len(t.h) - 1)
	t.up(len(t.h) - 1)
}

// pop removes the earliest entry.
func (t *timers) pop() entry {
	e := t.h[0]
	t.removeAt(0)
	return e
}

// set moves id's entry to at, adding it when id has none (tracked heaps only).
func (t *timers) set(id int32, at int64) {
	p := t.pos(id)
	if *p < 0 {
		t.push(entry{at: at, id: id})
		return
	}
	i := int(*p)
	t.h[i].at = at
	if !t.up(i) {
		t.down(i)
	}
}

// remove removes id's entry, if it has one (tracked heaps only).
func (t *timers) remove(id int32) {
	if p := t.pos(id); *p >= 0 {
		t.removeAt(int(*p))
	}
}

func (t *timers) removeAt(i int) {
	if t.pos != nil {
		*t.pos(t.h[i].id) = -1
	}
	last := len(t.h) - 1
	if i != last {
		t.h[i] = t.h[last]
		t.setPos(i)
	}
	t.h = t.h[:last]
	if i != last && !t.up(i) {
		t.down(i)
	}
	// A burst (a million checks held at once when they were first decided) leaves its array
	// behind: give it back once a quarter of it is used.
	if c := cap(t.h); c > 1024 && len(t.h) < c/4 {
		t.h = append(make([]entry, 0, 2*len(t.h)), t.h...)
	}
}

func (t *timers) setPos(i int) {
	if t.pos != nil {
		*t.pos(t.h[i].id) = int32(i)
	}
}

func (t *timers) swap(i, j int) {
	t.h[i], t.h[j] = t.h[j], t.h[i]
	t.setPos(i)
	t.setPos(j)
}

// up moves entry i toward the root; it reports whether it moved.
func (t *timers) up(i int) bool {
	moved := false
	for i > 0 {
		p := (i - 1) / 2
		if t.h[p].at <= t.h[i].at {
			break
		}
		t.swap(i, p)
		i, moved = p, true
	}
	return moved
}

func (t *timers) down(i int) {
	n := len(t.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.h[r].at < t.h[l].at {
			m = r
		}
		if t.h[i].at <= t.h[m].at {
			return
		}
		t.swap(i, m)
		i = m
	}
}

// emptied returns s emptied: its array kept for the next use, unless a burst grew it past
// 64 Ki entries (a million checks decided at once), which is not kept.
func emptied(s []int32) []int32 {
	if cap(s) > 1<<16 {
		return nil
	}
	return s[:0]
}
