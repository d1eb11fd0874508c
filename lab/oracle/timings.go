package oracle

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// maxFlight bounds how long a query the judge measures from may have been in flight.
const maxFlight = 10 * time.Second

// groupGap joins events applied this close together into one change of the network (a
// region cut from two others by two commands, say).
const groupGap = 100 * time.Millisecond

// repair reports whether e restores something rather than breaks it.
func repair(e Event) bool {
	switch e.Kind {
	case EventTargetUp, EventStart:
		return true
	case EventLink:
		return e.Link.Repair()
	}
	return false
}

// timings measures, for every group of events that changes a settled answer, how long each
// location took to give an answer that the new state allows and the old one does not.
func (j *judge) timings() []Timing {
	groups := j.groups()
	var out []Timing
	for g, grp := range groups {
		first := j.run.Events[grp[0]]
		t := Timing{Event: first, Group: j.run.Events[grp[0] : grp[1]+1], Repair: true, ByLocation: map[string]time.Duration{}}
		for i := grp[0]; i <= grp[1]; i++ {
			t.Repair = t.Repair && repair(j.run.Events[i])
			t.Bound = max(t.Bound, j.evWindow[i])
		}
		changed := false
		for _, loc := range slices.Sorted(maps.Keys(j.byLoc)) {
			sets := j.changedSets(loc, grp)
			if len(sets) == 0 {
				continue
			}
			changed = true
			// Search until the next group that changes one of these sets again has had its
			// window: this group's new state may show only then.
			until := j.run.End
			for _, next := range groups[g+1:] {
				if len(j.changedSets(loc, next)) > 0 {
					var w time.Duration
					for i := next[0]; i <= next[1]; i++ {
						w = max(w, j.evWindow[i])
					}
					until = j.run.Events[next[0]].At.Add(w)
					break
				}
			}
			if d, ok := j.firstNew(loc, sets, first.At, until); ok {
				t.ByLocation[loc] = d
			} else {
				t.Missing = append(t.Missing, loc)
			}
		}
		if changed {
			out = append(out, t)
		}
	}
	return out
}

// groups returns the events grouped into changes of the network: the first and the last
// event of each group.
func (j *judge) groups() [][2]int {
	var out [][2]int
	for i := 0; i < len(j.run.Events); {
		k := i
		for k+1 < len(j.run.Events) && j.run.Events[k+1].At.Sub(j.run.Events[i].At) <= groupGap {
			k++
		}
		out = append(out, [2]int{i, k})
		i = k + 1
	}
	return out
}

// changedSet is a record set whose settled answers a group of events changes at a location,
// with the settled values of its checks before and after, and what the location may serve
// of them just before the group (a transition still in progress included).
type changedSet struct {
	key           setKey
	checks        []string
	before, after []served
	was           []served
	open          []time.Time // by check: when the transitions open before the group end
}

// changedSets returns the record sets whose settled answers the events grp[0]..grp[1]
// change at loc: every check surely settled before and after, and the allowed answers differ.
func (j *judge) changedSets(loc string, grp [2]int) []changedSet {
	var out []changedSet
	lanes := j.tl.lanes[loc]
	for _, key := range j.sortedSets() {
		rs := j.sets[key]
		checks := setChecks(rs)
		cs := changedSet{key: key, checks: checks}
		sure, differ := true, false
		just := j.run.Events[grp[0]].At.Add(-j.m.b.Slack - time.Nanosecond)
		for _, id := range checks {
			cs.was = append(cs.was, lanes[id].at(just, just))
			var open time.Time
			for i, e := range j.run.Events[:grp[0]] {
				if end := e.At.Add(lanes[id].trans[i].window); end.After(open) {
					open = end
				}
			}
			cs.open = append(cs.open, open)
			b, a := lanes[id].trans[grp[0]].before, lanes[id].trans[grp[1]].after
			sure = sure && (b == servedOn || b == servedOff) && (a == servedOn || a == servedOff)
			cs.before, cs.after = append(cs.before, b), append(cs.after, a)
		}
		if !sure {
			continue
		}
		pb := Permitted(rs, servingOf(checks, cs.before))
		pa := Permitted(rs, servingOf(checks, cs.after))
		differ = pb.Count != pa.Count || !slices.Equal(pb.Pool, pa.Pool)
		if differ {
			out = append(out, cs)
		}
	}
	return out
}

// servingOf returns the serving function of sure masks.
func servingOf(checks []string, masks []served) func(string) bool {
	return func(id string) bool {
		i := slices.Index(checks, id)
		return i < 0 || masks[i] == servedOn
	}
}

// firstNew returns the time from at to the first answer at loc, received after at and sent
// before until, to one of sets that the new state allows and the old one does not. The old
// one is the settled state before the change when the location's last answer of the set
// before it showed that state; otherwise, for each check still in an earlier transition
// until it ends, everything the location may have served just before the change.
func (j *judge) firstNew(loc string, sets []changedSet, at, until time.Time) (time.Duration, bool) {
	qs := j.byLoc[loc]
	// Queries are in order of sending; one received after at was sent at most a flight
	// before it.
	first := sort.Search(len(qs), func(i int) bool { return !qs[i].Sent.Before(at.Add(-maxFlight)) })
	settledBefore := make([]bool, len(sets))
	for k, cs := range sets {
		rs := j.sets[cs.key]
		for i := first + sort.Search(len(qs)-first, func(i int) bool { return !qs[first+i].Received.Before(at) }) - 1; i >= 0; i-- {
			q := qs[i]
			if q.Received.Before(at) && q.answered() && q.Rcode == rcodeSuccess && strings.ToLower(q.Name) == cs.key.name && q.Type == cs.key.typ {
				settledBefore[k] = Permitted(rs, servingOf(cs.checks, cs.before)).Permits(q.Values) &&
					!Permitted(rs, servingOf(cs.checks, cs.after)).Permits(q.Values)
				break
			}
		}
	}
	for _, q := range qs[first:] {
		if q.Received.Before(at) || !q.answered() || q.Rcode != rcodeSuccess {
			continue
		}
		if !q.Sent.Before(until) {
			break
		}
		for k, cs := range sets {
			if strings.ToLower(q.Name) != cs.key.name || q.Type != cs.key.typ {
				continue
			}
			rs := j.sets[cs.key]
			if !Permitted(rs, servingOf(cs.checks, cs.after)).Permits(q.Values) {
				continue
			}
			// What the location might serve had the change not come: the settled state
			// before it, or for a check still in an earlier transition, what it may have
			// served then, until that transition is over.
			old := slices.Clone(cs.before)
			if !settledBefore[k] {
				for c := range old {
					if q.Sent.Before(cs.open[c]) {
						old[c] = cs.was[c]
					}
				}
			}
			allowedBefore := false
			combos(cs.checks, old, func(serving func(string) bool) bool {
				allowedBefore = Permitted(rs, serving).Permits(q.Values)
				return !allowedBefore
			})
			if !allowedBefore {
				return q.Received.Sub(at), true
			}
		}
	}
	return 0, false
}
