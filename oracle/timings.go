package oracle

import (
	"slices"
	"strings"
	"time"
)

// groupGap joins events applied this close together into one change of the network (a
// region cut from two others by two commands, say).
const groupGap = 100 * time.Millisecond

// repair reports whether e restores something rather than breaks it.
func repair(e Event) bool {
	switch e.Kind {
	case EventHeal, EventHealAll, EventTargetUp, EventStart:
		return true
	case EventLoss:
		return e.Percent == 0
	case EventLatency:
		return e.Delay == 0 && e.Jitter == 0
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
		t := Timing{Event: first, Repair: true, ByLocation: map[string]time.Duration{}}
		for i := grp[0]; i <= grp[1]; i++ {
			t.Repair = t.Repair && repair(j.run.Events[i])
			t.Bound = max(t.Bound, j.evWindow[i])
		}
		changed := false
		for _, loc := range sortedKeys(j.byLoc) {
			sets := j.changedSets(loc, grp)
			if len(sets) == 0 {
				continue
			}
			changed = true
			// Search until the next group that changes one of these sets again.
			until := j.run.End
			for _, next := range groups[g+1:] {
				if len(j.changedSets(loc, next)) > 0 {
					until = j.run.Events[next[0]].At
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
// with the settled values of its checks before and after.
type changedSet struct {
	key           setKey
	checks        []string
	before, after []served
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
		for _, id := range checks {
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
// before until, to one of sets that the new state allows and the old one does not.
func (j *judge) firstNew(loc string, sets []changedSet, at, until time.Time) (time.Duration, bool) {
	for _, q := range j.byLoc[loc] {
		if q.Received.Before(at) || !q.answered() || q.Rcode != rcodeSuccess {
			continue
		}
		if !q.Sent.Before(until) {
			break
		}
		for _, cs := range sets {
			if strings.ToLower(q.Name) != cs.key.name || q.Type != cs.key.typ {
				continue
			}
			rs := j.sets[cs.key]
			if Permitted(rs, servingOf(cs.checks, cs.after)).Permits(q.Values) &&
				!Permitted(rs, servingOf(cs.checks, cs.before)).Permits(q.Values) {
				return q.Received.Sub(at), true
			}
		}
	}
	return 0, false
}
