package oracle

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// presence is the set of values "the address is in the answer" may have.
type presence = tri

// unlimited is the allowance of a transition the model cannot count.
const unlimited = -1

// presenceOf returns whether value may be in rs's answers when its checks may be served as
// masks say.
func presenceOf(rs *config.RecordSet, checks []string, masks []served, value string) presence {
	var p presence
	if !combos(checks, masks, func(serving func(string) bool) bool {
		if slices.Contains(Permitted(rs, serving).Pool, value) {
			p |= yes
		} else {
			p |= no
		}
		return p != either
	}) {
		return either
	}
	return p
}

// watched reports whether rs's answers show each record's health: a failover set, or a
// multivalue one whose every healthy record fits in one answer.
func watched(rs *config.RecordSet) bool {
	return rs.Policy == config.PolicyFailover ||
		(rs.Policy == config.PolicyMultivalue && len(rs.Records) <= config.MaxMultivalueAnswers)
}

// allowance is how many presence changes of one address one event may explain at one
// location, and when.
type allowance struct {
	event    int
	from, to time.Time
	left     int // changes left to explain, or unlimited
}

// flips finds, at every location, the presence changes of watched records' addresses that
// no event explains.
func (j *judge) flips() []Finding {
	var out []Finding
	for _, key := range j.sortedSets() {
		rs := j.sets[key]
		if !watched(rs) {
			continue
		}
		checks := setChecks(rs)
		for _, loc := range slices.Sorted(maps.Keys(j.byLoc)) {
			var answers []Query
			for _, q := range j.byLoc[loc] {
				if strings.ToLower(q.Name) == key.name && q.Type == key.typ && q.answered() && q.Rcode == rcodeSuccess {
					answers = append(answers, q)
				}
			}
			for _, r := range rs.Records {
				if r.HealthCheck == "" {
					continue
				}
				out = append(out, j.flipsOf(loc, rs, checks, r.Value, answers)...)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return a.Query.Sent.Compare(b.Query.Sent) })
	return out
}

// sortedSets returns the record sets' keys in order.
func (j *judge) sortedSets() []setKey {
	keys := make([]setKey, 0, len(j.sets))
	for k := range j.sets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b setKey) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(string(a.typ), string(b.typ))
	})
	return keys
}

// flipsOf returns the unexplained presence changes of value in the answers (in order of
// sending) of rs at loc.
func (j *judge) flipsOf(loc string, rs *config.RecordSet, checks []string, value string, answers []Query) []Finding {
	lanes := j.tl.lanes[loc]
	slack := j.m.b.Slack
	var allow []allowance
	for _, g := range j.groups() {
		var w time.Duration
		restart := false
		before, after, transit := make([]served, len(checks)), make([]served, len(checks)), make([]served, len(checks))
		for k, id := range checks {
			ts := lanes[id].trans
			before[k], after[k] = ts[g[0]].before, ts[g[1]].after
			for i := g[0]; i <= g[1]; i++ {
				w = max(w, ts[i].window)
				restart = restart || ts[i].restart
				transit[k] |= ts[i].transit
			}
		}
		if w == 0 {
			continue
		}
		pb, pa, pt := presenceOf(rs, checks, before, value), presenceOf(rs, checks, after, value), presenceOf(rs, checks, transit, value)
		left := 0
		switch {
		case restart || pb == either || pa == either:
			left = unlimited
		case pb != pa:
			left = 1
		case pt == either:
			left = 2
		}
		if left != 0 {
			at := j.run.Events[g[0]].At
			allow = append(allow, allowance{event: g[0], from: at.Add(-slack), to: j.run.Events[g[1]].At.Add(w), left: left})
		}
	}
	unsure := j.unsureWorlds(rs, checks, loc, value)
	var out []Finding
	for k := 1; k < len(answers); k++ {
		a, b := answers[k-1], answers[k]
		was, is := slices.Contains(a.Values, value), slices.Contains(b.Values, value)
		if was == is {
			continue
		}
		if j.explain(allow, a.Sent, b.Received) || overlapsAny(unsure, a.Sent, b.Received) {
			continue
		}
		what := "came back into"
		if was {
			what = "left"
		}
		reason := fmt.Sprintf("%s %s the answers of %s while nothing about it changed", value, what, b.Name)
		if spent := j.spentWindow(allow, a.Sent, b.Received); spent >= 0 {
			reason = fmt.Sprintf("%s %s the answers of %s: one change more than the transition after [%v] can make",
				value, what, b.Name, j.run.Events[spent])
		}
		masks := make([]served, len(checks))
		for i, id := range checks {
			masks[i] = lanes[id].at(a.Sent, b.Received)
		}
		f := j.finding(b, reason, j.allowed(rs, checks, masks))
		if relaxed, st := j.relaxStarved(checks, masks, a.Sent, b.Received); st.To.After(st.From) && presenceOf(rs, checks, relaxed, value) == either {
			j.excused = append(j.excused, excuse(f, "FLIP", st))
			continue
		}
		out = append(out, *f)
	}
	return out
}

// explain takes one change in [from, to] out of the allowance whose window covers it and
// ends first; it reports whether one did.
func (j *judge) explain(allow []allowance, from, to time.Time) bool {
	best := -1
	for i, a := range allow {
		if a.left == 0 || a.from.After(to) || a.to.Before(from) {
			continue
		}
		if best < 0 || a.to.Before(allow[best].to) {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	if allow[best].left > 0 {
		allow[best].left--
	}
	return true
}

// spentWindow returns the event whose window covers [from, to] but has no change left, or -1.
func (j *judge) spentWindow(allow []allowance, from, to time.Time) int {
	for _, a := range allow {
		if !a.from.After(to) && !a.to.Before(from) {
			return a.event
		}
	}
	return -1
}

// unsureWorlds returns the intervals in which the settled presence of value at loc is
// unsure: changes there are not counted.
func (j *judge) unsureWorlds(rs *config.RecordSet, checks []string, loc, value string) [][2]time.Time {
	var out [][2]time.Time
	lanes := j.tl.lanes[loc]
	for w := range j.tl.worlds {
		ms := make([]served, len(checks))
		for k, id := range checks {
			t := lanes[id].trans
			switch {
			case len(t) == 0:
				ms[k] = lanes[id].at(j.run.Start, j.run.Start)
			case w == 0:
				ms[k] = t[0].before
			default:
				ms[k] = t[w-1].after
			}
		}
		if presenceOf(rs, checks, ms, value) == either {
			out = append(out, [2]time.Time{j.tl.worldStart(w), j.tl.worldEnd(w)})
		}
	}
	return out
}

// overlapsAny reports whether [from, to] meets one of the intervals.
func overlapsAny(ivs [][2]time.Time, from, to time.Time) bool {
	for _, iv := range ivs {
		if !iv[0].After(to) && iv[1].After(from) {
			return true
		}
	}
	return false
}
