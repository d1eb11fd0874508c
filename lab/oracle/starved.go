package oracle

import (
	"fmt"
	"time"
)

// A harness that runs the network in its own process stops every probe with it: a probe in
// flight while the process ran nothing for longer than the probe's timeout fails for the
// machine, not for its target, and the checkers of every region fail it at the same instant.
// Such a check is starved: from the start of a stall at least as long as its timeout until
// its recovery window after the stall ended (success_threshold intervals and a timeout, plus
// Bounds.Tick, Spread and Slack, without the other stalls' total: a later stall as long
// starves it anew, a shorter one does not), it may be served either way. A wrong answer or a flip that
// the check's other value explains is excused (Report.Excused), not counted; one that it does
// not explain, or that comes with no such stall, still counts.

// starved reports whether check id was starved at some instant of [from, to]: a stall of the
// harness at least as long as its probe timeout began by to and ended less than its recovery
// window before from. A calculated check is starved when one of its children is.
func (j *judge) starved(id string, from, to time.Time) (Stall, bool) {
	c := j.m.checks[id]
	if c == nil {
		return Stall{}, false
	}
	for _, ch := range c.Children {
		if st, ok := j.starved(ch, from, to); ok {
			return st, true
		}
	}
	if len(c.Children) > 0 {
		return Stall{}, false
	}
	p := params(c)
	back := time.Duration(p.successes)*p.interval + p.timeout + j.m.b.Tick + j.m.b.Spread + j.baseSlack
	for _, st := range j.run.Stalls {
		if st.To.Sub(st.From) >= p.timeout && !st.From.After(to) && st.To.Add(back).After(from) {
			return st, true
		}
	}
	return Stall{}, false
}

// relaxStarved returns masks with every check starved in [from, to] widened to either value,
// and the longest stall that starved one (zero when none did).
func (j *judge) relaxStarved(checks []string, masks []served, from, to time.Time) ([]served, Stall) {
	out := append([]served(nil), masks...)
	var longest Stall
	for i, id := range checks {
		if st, ok := j.starved(id, from, to); ok {
			out[i] = servedAny
			if st.To.Sub(st.From) > longest.To.Sub(longest.From) {
				longest = st
			}
		}
	}
	return out, longest
}

// excuse turns f into an excused finding: its reason says the stall that explains it.
func excuse(f *Finding, kind string, st Stall) Finding {
	e := *f
	e.Reason = fmt.Sprintf("%s excused: the harness stalled %v (%s to %s), at least a probe timeout of a check of the record set: %s",
		kind, st.To.Sub(st.From).Round(time.Millisecond), st.From.Format("15:04:05.000"), st.To.Format("15:04:05.000"), f.Reason)
	return e
}
