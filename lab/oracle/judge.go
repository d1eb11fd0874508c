package oracle

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// maxUnsureChecks bounds the checks of one record set whose values the judge combines when
// each may be either (2^n combinations); an answer beyond it is allowed, and said unsure.
const maxUnsureChecks = 12

// aroundQueries is how many queries of the same name a finding shows on each side.
const aroundQueries = 3

// judge holds a run's model while its queries are judged.
type judge struct {
	run   *Run
	m     *model
	tl    *timelines
	sets  map[setKey]*config.RecordSet
	byLoc map[string][]Query // judged queries by location, in order of sending
	// evWindow is, by event, the longest transition window it opened at any location.
	evWindow []time.Duration
	down     map[string][][2]time.Time // by location: intervals it was down or starting
	// excused are the findings that a check starved by a stall of the harness explains.
	excused []Finding
	// baseSlack is Bounds.Slack without the stalls' total: a starved check's recovery
	// counts from the end of the stall that starved it, and a later stall starves it anew.
	baseSlack time.Duration
}

// setKey names a record set: owner name and type.
type setKey struct {
	name string
	typ  config.RecordType
}

// Judge judges every query of r: wrong answers, flips, unanswered queries beyond the bound,
// and detection and recovery times, by the model of the package documentation under b. The
// error is not nil when r cannot be judged (Run.Validate, or bounds out of range).
func Judge(r Run, b Bounds) (Report, error) {
	var rep Report
	if err := b.validate(); err != nil {
		return rep, err
	}
	if err := r.Validate(); err != nil {
		return rep, err
	}
	rep.Stalls, rep.Stalled = len(r.Stalls), r.stalled()
	baseSlack := b.Slack
	b.Slack += rep.Stalled
	j := &judge{run: &r, m: newModel(&r, b), sets: map[setKey]*config.RecordSet{}, byLoc: map[string][]Query{}, baseSlack: baseSlack}
	j.tl = buildTimelines(j.m, &r)
	for _, z := range r.Document.Zones {
		for i := range z.RecordSets {
			rs := &z.RecordSets[i]
			if rs.Type == config.TypeA || rs.Type == config.TypeAAAA {
				j.sets[setKey{OwnerName(rs.Name, z.Name), rs.Type}] = rs
			}
		}
	}
	j.evWindow = make([]time.Duration, len(r.Events))
	for _, lanes := range j.tl.lanes {
		for _, l := range lanes {
			for i, t := range l.trans {
				j.evWindow[i] = max(j.evWindow[i], t.window)
			}
		}
	}
	j.down = j.downIntervals()
	rep.Unsure = j.tl.unsure
	rep.Unanswered = map[string]Unanswered{}
	rep.Queries = len(r.Queries)
	for _, q := range r.Queries {
		if !j.judged(q) {
			continue
		}
		q.Values = slices.Sorted(slices.Values(q.Values))
		if q.Received.Before(q.Sent) {
			q.Received = q.Sent // a failed query may come without the instant it ended
		}
		j.byLoc[q.Location] = append(j.byLoc[q.Location], q)
	}
	for _, l := range slices.Sorted(maps.Keys(j.byLoc)) {
		qs := j.byLoc[l]
		slices.SortStableFunc(qs, func(a, b Query) int { return a.Sent.Compare(b.Sent) })
		u := Unanswered{Judged: len(qs)}
		for i, q := range qs {
			rep.Judged++
			if !q.answered() {
				if j.isDown(l, q.Sent, q.Received) || j.inStall(q.Sent, q.Received) {
					u.Excused++
				} else {
					u.Counted++
					if u.First == nil {
						u.First = &qs[i]
					}
				}
				continue
			}
			rep.Answered++
			last, f := j.answer(q)
			switch {
			case f != nil:
				rep.Wrong = append(rep.Wrong, *f)
			case last:
				rep.LastResort++
			}
		}
		u.Bound = int(math.Floor(b.Unanswered * float64(u.Judged)))
		rep.Unanswered[l] = u
	}
	rep.Flips = j.flips()
	rep.Excused = j.excused
	rep.Timings = j.timings()
	return rep, nil
}

// judged reports whether q is one the oracle judges: sent within the run, to a location, for
// a name and type of an A or AAAA record set.
func (j *judge) judged(q Query) bool {
	if q.Sent.Before(j.run.Start) || q.Sent.After(j.run.End) || j.tl.lanes[q.Location] == nil {
		return false
	}
	_, ok := j.sets[setKey{strings.ToLower(q.Name), q.Type}]
	return ok
}

// downIntervals returns, by location, when each was killed until LocationStart after it
// started again (Slack either side).
func (j *judge) downIntervals() map[string][][2]time.Time {
	out := map[string][][2]time.Time{}
	since := map[string]time.Time{}
	slack := j.m.b.Slack
	for _, n := range j.run.Topology.Nodes {
		if n.Late {
			since[n.Name] = j.run.Start.Add(-far)
		}
	}
	for _, e := range j.run.Events {
		switch e.Kind {
		case EventKill, EventKillLeader:
			if _, ok := since[e.Node]; !ok && e.Node != "" {
				since[e.Node] = e.At.Add(-slack)
			}
		case EventStart:
			if s, ok := since[e.Node]; ok {
				out[e.Node] = append(out[e.Node], [2]time.Time{s, e.At.Add(j.m.b.LocationStart + slack)})
				delete(since, e.Node)
			}
		}
	}
	for n, s := range since {
		out[n] = append(out[n], [2]time.Time{s, j.run.Start.Add(far)})
	}
	return out
}

// isDown reports whether location l was down or starting at some instant of [from, to].
func (j *judge) isDown(l string, from, to time.Time) bool {
	for _, iv := range j.down[l] {
		if !iv[0].After(to) && iv[1].After(from) {
			return true
		}
	}
	return false
}

// inStall reports whether the harness stalled between from and to.
func (j *judge) inStall(from, to time.Time) bool {
	for _, st := range j.run.Stalls {
		if !st.From.After(to) && st.To.After(from) {
			return true
		}
	}
	return false
}

// setChecks returns the distinct checks of rs's records.
func setChecks(rs *config.RecordSet) []string {
	var out []string
	for _, r := range rs.Records {
		if r.HealthCheck != "" && !slices.Contains(out, r.HealthCheck) {
			out = append(out, r.HealthCheck)
		}
	}
	return out
}

// combos calls f with every assignment of served values the masks allow (one per check);
// it stops when f returns false, and reports false when there are more unsure checks than
// it combines.
func combos(checks []string, masks []served, f func(serving func(string) bool) bool) bool {
	var unsure []int
	pick := make([]bool, len(checks))
	for i, m := range masks {
		switch m {
		case servedAny:
			unsure = append(unsure, i)
		case servedOn:
			pick[i] = true
		}
	}
	if len(unsure) > maxUnsureChecks {
		return false
	}
	serving := func(id string) bool {
		i := slices.Index(checks, id)
		return i < 0 || pick[i]
	}
	for bits := 0; bits < 1<<len(unsure); bits++ {
		for k, i := range unsure {
			pick[i] = bits&(1<<k) != 0
		}
		if !f(serving) {
			return true
		}
	}
	return true
}

// answer judges one answered query: whether only last resort allowed it, or why nothing did.
func (j *judge) answer(q Query) (bool, *Finding) {
	rs := j.sets[setKey{strings.ToLower(q.Name), q.Type}]
	if q.Rcode != rcodeSuccess {
		return false, j.finding(q, fmt.Sprintf("a record set with records must be answered, got %s", rcodeName(q.Rcode)), nil)
	}
	checks := setChecks(rs)
	masks := make([]served, len(checks))
	for i, id := range checks {
		masks[i] = j.tl.lanes[q.Location][id].at(q.Sent, q.Received)
	}
	matched, onlyLast := false, true
	if !combos(checks, masks, func(serving func(string) bool) bool {
		al := Permitted(rs, serving)
		if al.Permits(q.Values) {
			matched, onlyLast = true, onlyLast && al.LastResort
		}
		return true
	}) {
		return false, nil // too many unsure checks to combine: allowed
	}
	if matched {
		return onlyLast, nil
	}
	f := j.finding(q, "no value the model allows for the record set's checks at this location selects this answer", j.allowed(rs, checks, masks))
	if relaxed, st := j.relaxStarved(checks, masks, q.Sent, q.Received); st.To.After(st.From) && j.permitted(rs, checks, relaxed, q.Values) {
		j.excused = append(j.excused, excuse(f, "WRONG", st))
		return false, nil
	}
	return false, f
}

// permitted reports whether some value the masks allow of rs's checks selects values.
func (j *judge) permitted(rs *config.RecordSet, checks []string, masks []served, values []string) bool {
	ok := false
	if !combos(checks, masks, func(serving func(string) bool) bool {
		ok = Permitted(rs, serving).Permits(values)
		return !ok
	}) {
		return true
	}
	return ok
}

// allowed says what the masks allow of rs, for a finding.
func (j *judge) allowed(rs *config.RecordSet, checks []string, masks []served) []string {
	var out []string
	for i, id := range checks {
		out = append(out, fmt.Sprintf("%s %s", id, masks[i]))
	}
	var answers []string
	combos(checks, masks, func(serving func(string) bool) bool {
		al := Permitted(rs, serving)
		s := fmt.Sprintf("%d of [%s]", al.Count, strings.Join(al.Pool, " "))
		if al.LastResort {
			s += " (last resort)"
		}
		if !slices.Contains(answers, s) {
			answers = append(answers, s)
		}
		return len(answers) < 8
	})
	return append(out, "answers: "+strings.Join(answers, ", "))
}

// finding returns a finding of q with the queries around it and the events in force.
func (j *judge) finding(q Query, reason string, allowed []string) *Finding {
	f := &Finding{Query: q, Reason: reason, Allowed: allowed}
	qs := j.byLoc[q.Location]
	at := sort.Search(len(qs), func(i int) bool { return !qs[i].Sent.Before(q.Sent) })
	same := func(o Query) bool { return o.Name == q.Name && o.Type == q.Type }
	var before []Query
	for i := at - 1; i >= 0 && len(before) < aroundQueries; i-- {
		if same(qs[i]) {
			before = append(before, qs[i])
		}
	}
	slices.Reverse(before)
	f.Around = before
	for i := at; i < len(qs) && len(f.Around) < len(before)+aroundQueries+1; i++ {
		if same(qs[i]) {
			f.Around = append(f.Around, qs[i])
		}
	}
	f.InForce = j.inForce(q.Sent, q.Received)
	return f
}

// inForce returns the events whose transition windows reach [from, to], and the last event
// before it.
func (j *judge) inForce(from, to time.Time) []Event {
	var out []Event
	last := -1
	for i, e := range j.run.Events {
		if e.At.After(to) {
			break
		}
		last = i
		if !e.At.Add(j.evWindow[i]).Before(from) {
			out = append(out, e)
		}
	}
	if len(out) == 0 && last >= 0 {
		out = append(out, j.run.Events[last])
	}
	return out
}

// OwnerName returns the absolute lower-case owner name of a record set named name in the
// zone apex: configuration normalises names to that form, but a hand-built one may be
// relative ("www"), "@" or absolute without the final dot.
func OwnerName(name, apex string) string {
	apex = strings.ToLower(strings.TrimSuffix(apex, ".")) + "."
	name = strings.ToLower(name)
	bare := strings.TrimSuffix(apex, ".")
	switch {
	case name == "@" || name == "":
		return apex
	case strings.HasSuffix(name, "."):
		return name
	case name == bare || strings.HasSuffix(name, "."+bare):
		return name + "."
	}
	return name + "." + apex
}
