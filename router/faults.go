package router

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Dir is one direction between two regions: packets from From to To.
type Dir struct{ From, To string }

// Link is what one direction of a link does to its packets.
type Link struct {
	// Cut drops every packet.
	Cut bool
	// Latency is how long each packet is held; LatencySet says Latency replaces the link's
	// default.
	Latency    time.Duration
	LatencySet bool
	// Loss is the share of packets dropped, in percent (0 to 100).
	Loss float64
}

// Faults is the table of faults in force, by direction, and the links' default latencies.
// The zero value is not usable: NewFaults makes one.
type Faults struct {
	regions  []string
	defaults map[Dir]time.Duration
	links    map[Dir]Link
}

// NewFaults returns a table without faults for the regions, with the default latency of
// each direction (a direction missing from defaults has none).
func NewFaults(regions []string, defaults map[Dir]time.Duration) *Faults {
	return &Faults{regions: slices.Clone(regions), defaults: defaults, links: map[Dir]Link{}}
}

// Of returns what direction d does now: its default latency unless a fault replaced it.
func (f *Faults) Of(d Dir) Link {
	l := f.links[d]
	if !l.LatencySet {
		l.Latency = f.defaults[d]
	}
	return l
}

// Apply changes the table by one command, as `vigil router ctl` passes it:
//
//	cut REGION            every link of REGION, both ways
//	cut A B               the link between A and B, both ways
//	cut-oneway FROM TO    packets from FROM to TO only
//	latency A B DURATION  both ways of the link between A and B (0 restores the default)
//	loss A B PERCENT      both ways of the link between A and B
//	heal                  no fault at all
func (f *Faults) Apply(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("router: no fault command")
	}
	verb, rest := args[0], args[1:]
	for _, r := range rest[:min(len(rest), 2)] {
		if !slices.Contains(f.regions, r) {
			return fmt.Errorf("router: unknown region %q (regions: %s)", r, strings.Join(f.regions, ", "))
		}
	}
	both := func(a, b string, change func(*Link)) {
		for _, d := range []Dir{{a, b}, {b, a}} {
			l := f.links[d]
			change(&l)
			f.set(d, l)
		}
	}
	switch {
	case verb == "heal" && len(rest) == 0:
		clear(f.links)
	case verb == "cut" && len(rest) == 1:
		for _, o := range f.regions {
			if o != rest[0] {
				both(rest[0], o, func(l *Link) { l.Cut = true })
			}
		}
	case verb == "cut" && len(rest) == 2 && rest[0] != rest[1]:
		both(rest[0], rest[1], func(l *Link) { l.Cut = true })
	case verb == "cut-oneway" && len(rest) == 2 && rest[0] != rest[1]:
		d := Dir{rest[0], rest[1]}
		l := f.links[d]
		l.Cut = true
		f.set(d, l)
	case verb == "latency" && len(rest) == 3 && rest[0] != rest[1]:
		v, err := time.ParseDuration(rest[2])
		if err != nil || v < 0 || v > 10*time.Second {
			return fmt.Errorf("router: latency %q: want a duration from 0 to 10s", rest[2])
		}
		both(rest[0], rest[1], func(l *Link) { l.Latency, l.LatencySet = v, v > 0 })
	case verb == "loss" && len(rest) == 3 && rest[0] != rest[1]:
		v, err := strconv.ParseFloat(strings.TrimSuffix(rest[2], "%"), 64)
		if err != nil || v < 0 || v > 100 {
			return fmt.Errorf("router: loss %q: want a percentage from 0 to 100", rest[2])
		}
		both(rest[0], rest[1], func(l *Link) { l.Loss = v })
	default:
		return fmt.Errorf("router: %q: want cut REGION, cut A B, cut-oneway FROM TO, latency A B DURATION, loss A B PERCENT or heal", strings.Join(args, " "))
	}
	return nil
}

// set stores l for d, or forgets d when l is no fault.
func (f *Faults) set(d Dir, l Link) {
	if l == (Link{}) {
		delete(f.links, d)
		return
	}
	f.links[d] = l
}

// Lines describes every direction from region from, in the regions' order: its latency and
// its faults, one line each, e.g. "us-east  -> sa-east    60ms  cut".
func (f *Faults) Lines(from string) []string {
	var out []string
	for _, a := range f.regions {
		for _, b := range f.regions {
			if a == b || a != from {
				continue
			}
			d := Dir{a, b}
			l := f.Of(d)
			var what []string
			if l.Cut {
				what = append(what, "cut")
			}
			if l.Loss > 0 {
				what = append(what, strconv.FormatFloat(l.Loss, 'f', -1, 64)+"% loss")
			}
			if l.LatencySet {
				what = append(what, "latency changed from "+f.defaults[d].String())
			}
			if len(what) == 0 {
				what = append(what, "ok")
			}
			out = append(out, fmt.Sprintf("%-8s -> %-8s %6s  %s", a, b, l.Latency, strings.Join(what, ", ")))
		}
	}
	return out
}

// Active reports whether any fault is in force.
func (f *Faults) Active() bool { return len(f.links) > 0 }
