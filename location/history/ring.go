package history

// The availability buckets of one check: seconds observed, and of them seconds healthy, per
// minute over the last hour and per hour over the last week. They are rings indexed by the
// absolute minute (hour) modulo their length; advance clears a slot when time enters it.

const (
	minuteSlots = 60
	hourSlots   = 7 * 24
)

// buckets are one check's availability counters: 60×2 bytes + 168×4 bytes.
type buckets struct {
	minute [minuteSlots][2]uint8 // observed, healthy seconds
	hour   [hourSlots][2]uint16  // observed, healthy seconds
	last   int64                 // unix second up to which time is accounted; 0: never
}

// advance accounts the seconds from b.last to to (unix seconds): added to the slots they fall
// in when observed, to healthy as well when healthy; slots entered on the way are cleared
// first. Time that runs backwards is ignored. It loops at most 60 + 169 times.
func (b *buckets) advance(to int64, observed, healthy bool) {
	from := b.last
	if to <= from {
		return
	}
	b.last = to
	if from == 0 || to-from >= hourSlots*3600 {
		b.hour = [hourSlots][2]uint16{}
		b.minute = [minuteSlots][2]uint8{}
		if from == 0 {
			return // nothing was accounted before: start counting from to
		}
		from = to - hourSlots*3600
	}
	// Hours.
	for t := from; t < to; {
		h := t / 3600
		end := min((h+1)*3600, to)
		s := &b.hour[h%hourSlots]
		if t == h*3600 {
			*s = [2]uint16{} // entering hour h
		}
		if observed {
			s[0] += uint16(end - t)
			if healthy {
				s[1] += uint16(end - t)
			}
		}
		t = end
	}
	// Minutes: only the last hour can still be in the ring.
	mfrom := from
	if to-from >= minuteSlots*60 {
		b.minute = [minuteSlots][2]uint8{}
		mfrom = (to/60 - minuteSlots + 1) * 60
	}
	for t := mfrom; t < to; {
		m := t / 60
		end := min((m+1)*60, to)
		s := &b.minute[m%minuteSlots]
		if t == m*60 {
			*s = [2]uint8{}
		}
		if observed {
			s[0] += uint8(end - t)
			if healthy {
				s[1] += uint8(end - t)
			}
		}
		t = end
	}
}

// sums returns the observed and healthy seconds of the last hour (the ring of minutes), the
// last day (the current hour and the 23 before) and the last week (every hour slot), as of
// b.last.
func (b *buckets) sums() (out [3][2]int64) {
	for _, s := range b.minute {
		out[0][0] += int64(s[0])
		out[0][1] += int64(s[1])
	}
	h := b.last / 3600
	if b.last%3600 == 0 {
		h-- // at an hour's boundary the current hour holds nothing yet
	}
	for i := range int64(hourSlots) {
		s := b.hour[(h-i)%hourSlots]
		if i < 24 {
			out[1][0] += int64(s[0])
			out[1][1] += int64(s[1])
		}
		out[2][0] += int64(s[0])
		out[2][1] += int64(s[1])
	}
	return out
}

// accrue brings c's buckets to to (unix seconds), counting the gaps as not observed; a check
// without buckets keeps none.
func (s *Store) accrue(c *check, to int64) {
	if c.b != nil {
		s.accrueInto(c.b, c.state(), to)
	}
}

// accrueInto brings b to to (unix seconds) in state, counting the gaps as not observed.
func (s *Store) accrueInto(b *buckets, state uint8, to int64) {
	healthy := state == 1
	observed := state != 0
	for _, g := range s.gaps {
		if g.to <= b.last || g.from >= to {
			continue
		}
		b.advance(min(g.from, to), observed, healthy)
		b.advance(min(g.to, to), false, false)
	}
	b.advance(to, observed, healthy)
}

// sums returns c's observed and healthy seconds over the three windows as of to (unix
// seconds); see buckets.sums. A check without buckets is counted in a copy replayed from its
// changes.
func (s *Store) sums(c *check, to int64) [3][2]int64 {
	b := c.b
	if b == nil {
		b = s.replayed(c)
	}
	s.accrueInto(b, c.state(), to)
	return b.sums()
}

// replayed returns the buckets of a check that holds none, from its changes (then every
// change since its first verdict, oldest first), accounted up to its last change: what
// buckets kept since its first verdict would hold.
func (s *Store) replayed(c *check) *buckets {
	b := &buckets{}
	evs := c.events()
	for i, e := range evs {
		if i == 0 {
			b.last = e.at() / 1000 // where advancing from zero starts
			continue
		}
		s.accrueInto(b, evs[i-1].to(), e.at()/1000)
	}
	return b
}
