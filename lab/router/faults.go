package router

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

// Faults is the table of faults in force, by direction, and the links' default latencies.
// The zero value is not usable: NewFaults makes one.
type Faults struct {
	set      *regions.Faults
	defaults map[regions.Link]time.Duration
}

// NewFaults returns a table without faults for the regions, with the default latency of
// each direction (a direction missing from defaults has none).
func NewFaults(rs []string, defaults map[regions.Link]time.Duration) *Faults {
	return &Faults{set: regions.NewFaults(rs...), defaults: defaults}
}

// Of returns what direction l does now: its default latency unless a fault replaced it.
func (f *Faults) Of(l regions.Link) regions.State {
	s := f.set.Of(l)
	if s.Delay == 0 {
		s.Delay = f.defaults[l]
	}
	return s
}

// Apply changes the table by one command, as `vigil router ctl` passes it, in the text form
// of regions.ParseFault; a latency of 0 restores the link's default.
func (f *Faults) Apply(args []string) error {
	x, err := regions.ParseFault(args, f.set.Regions())
	if err == nil && x.Jitter > 0 {
		err = fmt.Errorf("latency: the routers hold every packet for the same time: no jitter")
	}
	if err == nil {
		err = f.set.Apply(x)
	}
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	return nil
}

// Lines describes every direction from region from, in the regions' order: its latency and
// its faults, one line each, e.g. "us-east  -> sa-east    60ms  cut".
func (f *Faults) Lines(from string) []string {
	var out []string
	for _, to := range f.set.Regions() {
		if to == from || !slices.Contains(f.set.Regions(), from) {
			continue
		}
		l := regions.Link{From: from, To: to}
		s := f.Of(l)
		var what []string
		if s.Cut {
			what = append(what, "cut")
		}
		if s.Loss > 0 {
			what = append(what, strconv.FormatFloat(s.Loss, 'f', -1, 64)+"% loss")
		}
		if f.set.Of(l).Delay > 0 {
			what = append(what, "latency changed from "+f.defaults[l].String())
		}
		if len(what) == 0 {
			what = append(what, "ok")
		}
		out = append(out, fmt.Sprintf("%-8s -> %-8s %6s  %s", from, to, s.Delay, strings.Join(what, ", ")))
	}
	return out
}

// Active reports whether any fault is in force.
func (f *Faults) Active() bool { return f.set.Active() }
