package regions

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Link is one direction between two regions: the packets from From to To.
type Link struct{ From, To string }

// Reverse returns the other direction of the same link.
func (l Link) Reverse() Link { return Link{l.To, l.From} }

// State is what one direction of a link does to its packets; the zero State is a healthy
// link.
type State struct {
	// Cut drops every packet and fails every connection.
	Cut bool
	// Delay holds every packet, plus or minus up to Jitter.
	Delay, Jitter time.Duration
	// Loss is the share of packets dropped, in percent (0 to 100).
	Loss float64
}

// Kind names a change to the links between regions.
type Kind string

// The kinds of fault, as the commands and scripts spell them.
const (
	// Cut cuts the link between A and B both ways; with B empty, every link of A.
	Cut Kind = "cut"
	// CutOneWay drops the packets from A to B: A still hears B, B no longer hears A.
	CutOneWay Kind = "cut-oneway"
	// Loss drops Loss percent of the packets between A and B, each way; 0 ends it.
	Loss Kind = "loss"
	// Latency delays every packet between A and B by Delay ± Jitter, each way; 0 ends it.
	Latency Kind = "latency"
	// Heal restores the link between A and B (cut, loss and latency); with B empty, every
	// link of A; with A empty too, every link.
	Heal Kind = "heal"
)

// Fault is one change to the links between regions: a command of the demo's routers, a step
// of a scenario script, an event the oracle judges.
type Fault struct {
	Kind Kind
	// A and B are the link's regions (for CutOneWay, packets from A to B are lost).
	A, B string
	// Loss is the share of packets a Loss fault drops, in percent (0 to 100).
	Loss float64
	// Delay and Jitter are a Latency fault's one-way delay and its variation, plus or minus.
	Delay, Jitter time.Duration
}

// String says the fault in the text form ParseFault reads.
func (f Fault) String() string {
	parts := []string{string(f.Kind)}
	for _, r := range []string{f.A, f.B} {
		if r != "" {
			parts = append(parts, r)
		}
	}
	switch f.Kind {
	case Loss:
		parts = append(parts, strconv.FormatFloat(f.Loss, 'f', -1, 64))
	case Latency:
		parts = append(parts, f.Delay.String())
		if f.Jitter > 0 {
			parts = append(parts, f.Jitter.String())
		}
	}
	return strings.Join(parts, " ")
}

// Repair reports whether the fault removes a fault rather than adding one.
func (f Fault) Repair() bool {
	switch f.Kind {
	case Heal:
		return true
	case Loss:
		return f.Loss == 0
	case Latency:
		return f.Delay == 0 && f.Jitter == 0
	}
	return false
}

// Validate reports why f cannot apply between regions: an unknown kind or region, a region
// missing, or a figure out of range. A and B may name the same region (the links within it).
func (f Fault) Validate(regions []string) error {
	known := func(rs ...string) error {
		for _, r := range rs {
			if !slices.Contains(regions, r) {
				return fmt.Errorf("%w %q", ErrUnknownRegion, r)
			}
		}
		return nil
	}
	switch f.Kind {
	case Cut:
		if f.B == "" {
			return known(f.A)
		}
	case Heal:
		switch {
		case f.A == "" && f.B == "":
			return nil
		case f.B == "":
			return known(f.A)
		}
	case CutOneWay:
	case Loss:
		if !(f.Loss >= 0 && f.Loss <= 100) {
			return fmt.Errorf("regions: loss %v is not a percentage from 0 to 100", f.Loss)
		}
	case Latency:
		if f.Delay < 0 || f.Jitter < 0 {
			return fmt.Errorf("regions: negative latency %v±%v", f.Delay, f.Jitter)
		}
	default:
		return fmt.Errorf("regions: unknown fault %q", f.Kind)
	}
	return known(f.A, f.B)
}

// MaxLatency bounds the latency the text form accepts.
const MaxLatency = 10 * time.Second

// ParseFault reads a fault in its text form, a command's or a script line's fields:
//
//	cut REGION                        every link of REGION, both ways
//	cut A B                           the link between A and B, both ways
//	cut-oneway FROM TO                the packets from FROM to TO only
//	loss A B PERCENT                  that share of the packets between A and B, each way
//	latency A B DURATION [JITTER]     every packet between A and B, each way (0 ends it)
//	heal                              every link restored
//
// Every region named must be one of regions; the errors start with the fault's kind.
func ParseFault(args []string, regions []string) (Fault, error) {
	if len(args) == 0 {
		return Fault{}, fmt.Errorf("no fault (faults: cut, cut-oneway, loss, latency, heal)")
	}
	f := Fault{Kind: Kind(args[0])}
	args = args[1:]
	region := func(r string) error {
		if !slices.Contains(regions, r) {
			return fmt.Errorf("%s: unknown region %q (regions: %s)", f.Kind, r, strings.Join(regions, ", "))
		}
		return nil
	}
	count := func(want ...int) error {
		if !slices.Contains(want, len(args)) {
			return fmt.Errorf("%s takes %d arguments, got %d", f.Kind, want[0], len(args))
		}
		for _, r := range args[:min(len(args), 2)] {
			if err := region(r); err != nil {
				return err
			}
		}
		if args[0] == args[1] {
			return fmt.Errorf("%s: two different regions, got %s twice", f.Kind, args[0])
		}
		f.A, f.B = args[0], args[1]
		return nil
	}
	switch f.Kind {
	case Heal:
		if len(args) != 0 {
			return f, fmt.Errorf("heal takes no arguments, got %d", len(args))
		}
	case Cut:
		if len(args) != 1 && len(args) != 2 {
			return f, fmt.Errorf("cut takes one region or two, got %d arguments", len(args))
		}
		for _, r := range args {
			if err := region(r); err != nil {
				return f, err
			}
		}
		if len(args) == 2 && args[0] == args[1] {
			return f, fmt.Errorf("cut: a region cannot be cut from itself")
		}
		f.A = args[0]
		if len(args) == 2 {
			f.B = args[1]
		}
	case CutOneWay:
		return f, count(2)
	case Loss:
		if err := count(3); err != nil {
			return f, err
		}
		p, err := strconv.ParseFloat(strings.TrimSuffix(args[2], "%"), 64)
		if err != nil || !(p >= 0 && p <= 100) {
			return f, fmt.Errorf("loss: %q is not a percentage from 0 to 100", args[2])
		}
		f.Loss = p
	case Latency:
		if err := count(3, 4); err != nil {
			return f, err
		}
		d, err := time.ParseDuration(args[2])
		if err != nil || d < 0 || d > MaxLatency {
			return f, fmt.Errorf("latency: %q is not a duration from 0 to %v", args[2], MaxLatency)
		}
		f.Delay = d
		if len(args) == 4 {
			j, err := time.ParseDuration(args[3])
			if err != nil || j < 0 || j > d {
				return f, fmt.Errorf("latency: jitter %q is not a duration from 0 to the latency (%v)", args[3], d)
			}
			f.Jitter = j
		}
	default:
		return f, fmt.Errorf("unknown fault %q (faults: cut, cut-oneway, loss, latency, heal)", f.Kind)
	}
	return f, nil
}

// Faults is the set of faults in force on the links between a list of regions, by direction.
// It is not safe for concurrent use. The zero value has no regions: call NewFaults.
type Faults struct {
	regions []string
	links   map[Link]State
}

// NewFaults returns the faults between regions: none.
func NewFaults(regions ...string) *Faults {
	return &Faults{regions: slices.Clone(regions), links: map[Link]State{}}
}

// Regions returns the regions, in their order.
func (f *Faults) Regions() []string { return slices.Clone(f.regions) }

// addRegion adds a region without faults.
func (f *Faults) addRegion(name string) { f.regions = append(f.regions, name) }

// Clone returns a copy that changes independently of f.
func (f *Faults) Clone() *Faults {
	return &Faults{regions: slices.Clone(f.regions), links: maps.Clone(f.links)}
}

// Of returns what the direction l does now.
func (f *Faults) Of(l Link) State { return f.links[l] }

// Carries reports whether any packet from region from reaches region to: a region reaches
// itself unless the links within it are cut.
func (f *Faults) Carries(from, to string) bool { return !f.links[Link{from, to}].Cut }

// Active reports whether any fault is in force.
func (f *Faults) Active() bool { return len(f.links) > 0 }

// Faulty returns the directions with a fault in force, sorted.
func (f *Faults) Faulty() []Link {
	return slices.SortedFunc(maps.Keys(f.links), func(a, b Link) int {
		return strings.Compare(a.From+"\x00"+a.To, b.From+"\x00"+b.To)
	})
}

// Apply changes the faults in force by x, or returns why it cannot (see Fault.Validate).
func (f *Faults) Apply(x Fault) error {
	if err := x.Validate(f.regions); err != nil {
		return err
	}
	switch x.Kind {
	case Cut:
		for _, b := range f.others(x.A, x.B) {
			f.both(x.A, b, func(s *State) { s.Cut = true })
		}
	case CutOneWay:
		f.change(Link{x.A, x.B}, func(s *State) { s.Cut = true })
	case Loss:
		f.both(x.A, x.B, func(s *State) { s.Loss = x.Loss })
	case Latency:
		f.both(x.A, x.B, func(s *State) { s.Delay, s.Jitter = x.Delay, x.Jitter })
	case Heal:
		if x.A == "" {
			clear(f.links)
			break
		}
		for _, b := range f.others(x.A, x.B) {
			f.both(x.A, b, func(s *State) { *s = State{} })
		}
	}
	return nil
}

// others returns b, or every region but a when b is empty.
func (f *Faults) others(a, b string) []string {
	if b != "" {
		return []string{b}
	}
	var out []string
	for _, r := range f.regions {
		if r != a {
			out = append(out, r)
		}
	}
	return out
}

// both changes the link between a and b in both directions (once when a is b).
func (f *Faults) both(a, b string, change func(*State)) {
	f.change(Link{a, b}, change)
	if a != b {
		f.change(Link{b, a}, change)
	}
}

// change changes one direction, and forgets it when no fault is left.
func (f *Faults) change(l Link, change func(*State)) {
	s := f.links[l]
	change(&s)
	if s == (State{}) {
		delete(f.links, l)
		return
	}
	f.links[l] = s
}
