package oracle

import (
	"slices"
	"sort"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// segment is an interval over which a location may serve a check as mask says.
type segment struct {
	from, to time.Time
	mask     served
}

// transition is what one event does to what a location serves of one check.
type transition struct {
	window                 time.Duration // zero when the event changes nothing of it
	before, after, transit served        // settled before and after, and any mix meanwhile
	restart                bool          // the event started the location itself
}

// lane is everything the model says of one check at one location.
type lane struct {
	segs  []segment    // sorted, not overlapping
	trans []transition // by event index
}

// at returns what the location may serve of the check at any instant of [from, to].
func (l *lane) at(from, to time.Time) served {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].to.After(from) })
	var out served
	for ; i < len(l.segs) && !l.segs[i].from.After(to); i++ {
		out |= l.segs[i].mask
	}
	return out
}

// contrib is a value set allowed over an interval, before the intervals are merged.
type contrib struct {
	from, to time.Time
	mask     served
}

// timelines are the lanes of every location and check of a run.
type timelines struct {
	m      *model
	run    *Run
	worlds []*world // worlds[0] at Start; worlds[i+1] after Events[i]
	lanes  map[string]map[string]*lane
	unsure []Unsure
}

// far bounds every interval that has no end: beyond any run.
var far = 24 * 365 * time.Hour

// buildTimelines runs the events over the initial world and computes every lane.
func buildTimelines(m *model, r *Run) *timelines {
	tl := &timelines{m: m, run: r, lanes: map[string]map[string]*lane{}}
	w := initialWorld(&r.Topology)
	tl.worlds = append(tl.worlds, w)
	for _, e := range r.Events {
		w = w.clone()
		w.apply(e, r.Topology.Regions)
		tl.worlds = append(tl.worlds, w)
	}
	hearing := make([]map[[2]string]tri, len(tl.worlds))
	why := make([]map[[2]string][]string, len(tl.worlds))
	for i, w := range tl.worlds {
		hearing[i], why[i] = m.heardFrom(w)
	}
	unsure := map[string][]bool{} // reason -> by world
	for _, n := range r.Topology.Nodes {
		if !n.Has(RoleLocation) {
			continue
		}
		lanes := map[string]*lane{}
		tl.lanes[n.Name] = lanes
		for _, c := range m.doc.Checks {
			if c.Protocol == config.ProtocolCalculated {
				continue
			}
			if _, ok := m.target[c.ID]; !ok {
				lanes[c.ID] = tl.anyLane()
				continue
			}
			views := make([]view, len(tl.worlds))
			for i, w := range tl.worlds {
				views[i] = m.viewOf(w, hearing[i], why[i], n.Region, &c)
				if settledServed(&c, views[i]) == servedAny {
					for _, rv := range views[i] {
						for _, y := range rv.why {
							if unsure[y] == nil {
								unsure[y] = make([]bool, len(tl.worlds))
							}
							unsure[y][i] = true
						}
					}
				}
			}
			lanes[c.ID] = tl.probedLane(n, &c, views)
		}
		for _, c := range m.doc.Checks {
			if c.Protocol == config.ProtocolCalculated {
				tl.calculatedLane(lanes, c.ID, 0)
			}
		}
	}
	tl.unsure = tl.unsureIntervals(unsure)
	return tl
}

// worldStart returns when world i (1 and up) began, and the far past for world 0.
func (tl *timelines) worldStart(i int) time.Time {
	if i == 0 {
		return tl.run.Start.Add(-far)
	}
	return tl.run.Events[i-1].At
}

// worldEnd returns when world i ended, and the far future for the last.
func (tl *timelines) worldEnd(i int) time.Time {
	if i == len(tl.run.Events) {
		return tl.run.Start.Add(far)
	}
	return tl.run.Events[i].At
}

// anyLane returns a lane that allows everything: a check outside the model.
func (tl *timelines) anyLane() *lane {
	l := &lane{trans: make([]transition, len(tl.run.Events))}
	l.segs = []segment{{from: tl.worldStart(0), to: tl.worldEnd(len(tl.run.Events)), mask: servedAny}}
	for i := range l.trans {
		l.trans[i] = transition{before: servedAny, after: servedAny, transit: servedAny}
	}
	return l
}

// probedLane computes the lane of the probed check c at location node n from its views in
// every world.
func (tl *timelines) probedLane(n Node, c *config.Check, views []view) *lane {
	m, slack := tl.m, tl.m.b.Slack
	l := &lane{trans: make([]transition, len(tl.run.Events))}
	var cs []contrib
	for i, v := range views {
		cs = append(cs, contrib{from: tl.worldStart(i).Add(-slack), to: tl.worldEnd(i), mask: settledServed(c, v)})
	}
	type open struct {
		v     view
		until time.Time
	}
	var pending []open
	for i, e := range tl.run.Events {
		before, after := views[i], views[i+1]
		tr := transition{before: settledServed(c, before), after: settledServed(c, after)}
		tr.transit = tr.before | tr.after
		w := m.window(c, before, after, tl.worlds[i], tl.worlds[i+1])
		if w > 0 {
			pending = slices.DeleteFunc(pending, func(o open) bool { return !o.until.After(e.At) })
			pending = append(pending, open{widen(before, after, tl.worlds[i], tl.worlds[i+1], m), e.At.Add(w)})
			mix := after
			for _, o := range pending {
				mix = mix.merge(o.v)
			}
			s, short := verdicts(c, mix)
			if short {
				s |= servedOn
			}
			tr.transit |= s
			tr.window = w
			held := maskAt(cs, e.At.Add(-time.Nanosecond))
			cs = append(cs,
				contrib{from: e.At.Add(-slack), to: e.At.Add(w), mask: tr.transit},
				contrib{from: e.At, to: e.At.Add(w), mask: held})
		}
		if e.Kind == EventStart && e.Node == n.Name {
			// A started location has no verdict: it serves every check (fail open) until it
			// has decided, from whichever regions' reports reach it first.
			blind := slices.Clone(after)
			for j := range blind {
				blind[j].heard |= no
			}
			s, _ := verdicts(c, blind)
			rw := m.b.LocationStart + m.b.GossipRepair + m.fresh + m.b.Tick + slack
			cs = append(cs, contrib{from: e.At, to: e.At.Add(rw), mask: s | servedOn})
			tr.restart, tr.transit, tr.window = true, tr.transit|s|servedOn, max(tr.window, rw)
		}
		l.trans[i] = tr
	}
	l.segs = mergeContribs(cs)
	return l
}

// widen returns the view before an event, with the number of reports of each region whose
// checker processes changed widened for the handoff: the stopped checker's report stays
// fresh for a while, and its successor may already report (make before break).
func widen(before, after view, wb, wa *world, m *model) view {
	out := slices.Clone(before)
	for i := range out {
		changed := 0
		for _, n := range m.topo.Nodes {
			if n.Region == out[i].region && n.Has(RoleChecker) && wb.stopped[n.Name] != wa.stopped[n.Name] {
				changed++
			}
		}
		if changed > 0 {
			out[i].nLo = max(0, min(before[i].nLo, after[i].nLo)-changed)
			out[i].nHi = max(before[i].nHi, after[i].nHi) + changed
		}
	}
	return out
}

// window returns how long after an event that turns view before into after a location may
// still serve what before allows: zero when nothing of the check changed.
func (m *model) window(c *config.Check, before, after view, wb, wa *world) time.Duration {
	p := params(c)
	var w time.Duration
	for i := range before {
		a, b := before[i], after[i]
		if a.heard&yes != 0 && b.heard&no != 0 && a.heard != b.heard {
			w = max(w, m.fresh) // reports stop arriving: stale after the freshness window
		}
		if a.heard&no != 0 && b.heard&yes != 0 && a.heard != b.heard {
			w = max(w, m.b.GossipRepair)
		}
		if a.probe&yes != 0 && b.probe&no != 0 && a.probe != b.probe {
			w = max(w, p.interval*time.Duration(p.failures)+p.timeout)
		}
		if a.probe&no != 0 && b.probe&yes != 0 && a.probe != b.probe {
			w = max(w, p.interval*time.Duration(p.successes)+p.timeout)
		}
		if a.nLo != b.nLo || a.nHi != b.nHi || widened(a, b, wb, wa, m) {
			w = max(w, m.b.Membership+m.fresh+p.interval*time.Duration(max(p.failures, p.successes))+p.timeout)
		}
	}
	if w == 0 {
		return 0
	}
	if _, short := verdicts(c, widen(before, after, wb, wa, m).merge(after)); short {
		w += m.hold
	}
	hops := time.Duration(len(m.topo.Regions))
	return w + max(wb.worstDelay(), wa.worstDelay())*hops + m.b.Tick + m.b.Slack
}

// widened reports whether the checker processes of a's region changed between wb and wa.
func widened(a, b regionView, wb, wa *world, m *model) bool {
	w := widen(view{a}, view{b}, wb, wa, m)[0]
	return w.nLo != a.nLo || w.nHi != a.nHi
}

// calculatedLane computes the lane of the calculated check id from its children's lanes
// (computing theirs first); depth bounds a cycle the configuration should have refused.
func (tl *timelines) calculatedLane(lanes map[string]*lane, id string, depth int) *lane {
	if l, ok := lanes[id]; ok {
		return l
	}
	c := tl.m.checks[id]
	if c == nil || depth > len(tl.m.checks) {
		l := tl.anyLane()
		lanes[id] = l
		return l
	}
	if c.Protocol != config.ProtocolCalculated {
		return tl.anyLane() // a probed check missing from the lanes: not at this location
	}
	var children []*lane
	for _, ch := range c.Children {
		children = append(children, tl.calculatedLane(lanes, ch, depth+1))
	}
	l := &lane{trans: make([]transition, len(tl.run.Events))}
	var bounds []time.Time
	for _, ch := range children {
		for _, s := range ch.segs {
			bounds = append(bounds, s.from, s.to)
		}
	}
	slices.SortFunc(bounds, func(a, b time.Time) int { return a.Compare(b) })
	bounds = slices.CompactFunc(bounds, func(a, b time.Time) bool { return a.Equal(b) })
	for i := 0; i+1 < len(bounds); i++ {
		from, to := bounds[i], bounds[i+1]
		ms := make([]served, len(children))
		for j, ch := range children {
			ms[j] = ch.at(from, from) // constant over [from, to)
		}
		l.segs = appendSegment(l.segs, segment{from: from, to: to, mask: combine(c, ms)})
	}
	for i := range l.trans {
		var before, after, transit []served
		var w time.Duration
		restart := false
		for _, ch := range children {
			t := ch.trans[i]
			before, after, transit = append(before, t.before), append(after, t.after), append(transit, t.transit)
			w = max(w, t.window)
			restart = restart || t.restart
		}
		l.trans[i] = transition{window: w, before: combine(c, before), after: combine(c, after), transit: combine(c, transit), restart: restart}
	}
	lanes[id] = l
	return l
}

// maskAt returns the values the contributions allow at t.
func maskAt(cs []contrib, t time.Time) served {
	var out served
	for _, c := range cs {
		if !c.from.After(t) && c.to.After(t) {
			out |= c.mask
		}
	}
	return out
}

// mergeContribs turns overlapping contributions into sorted segments.
func mergeContribs(cs []contrib) []segment {
	type edge struct {
		at   time.Time
		mask served
		d    int
	}
	var edges []edge
	for _, c := range cs {
		if c.to.After(c.from) {
			edges = append(edges, edge{c.from, c.mask, 1}, edge{c.to, c.mask, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return a.at.Compare(b.at) })
	var count [2]int
	var out []segment
	for i := 0; i < len(edges); {
		at := edges[i].at
		for ; i < len(edges) && edges[i].at.Equal(at); i++ {
			if edges[i].mask&servedOff != 0 {
				count[0] += edges[i].d
			}
			if edges[i].mask&servedOn != 0 {
				count[1] += edges[i].d
			}
		}
		if i == len(edges) {
			break
		}
		var mask served
		if count[0] > 0 {
			mask |= servedOff
		}
		if count[1] > 0 {
			mask |= servedOn
		}
		if mask != 0 {
			out = appendSegment(out, segment{from: at, to: edges[i].at, mask: mask})
		}
	}
	return out
}

// appendSegment appends s, joining it to the last segment when they meet with one mask.
func appendSegment(segs []segment, s segment) []segment {
	if n := len(segs); n > 0 && segs[n-1].mask == s.mask && segs[n-1].to.Equal(s.from) {
		segs[n-1].to = s.to
		return segs
	}
	return append(segs, s)
}

// unsureIntervals turns the reasons found unsure in each world into intervals.
func (tl *timelines) unsureIntervals(byWorld map[string][]bool) []Unsure {
	var out []Unsure
	for _, why := range sortedKeys(byWorld) {
		ws := byWorld[why]
		for i := 0; i < len(ws); i++ {
			if !ws[i] {
				continue
			}
			j := i
			for j+1 < len(ws) && ws[j+1] {
				j++
			}
			u := Unsure{From: tl.run.Start, Why: why}
			if i > 0 {
				u.From = tl.run.Events[i-1].At
			}
			if j < len(tl.run.Events) {
				u.To = tl.run.Events[j].At
			}
			out = append(out, u)
			i = j
		}
	}
	for _, e := range tl.run.Events {
		if e.Kind == EventStart && tl.m.nodes[e.Node].Has(RoleLocation) {
			b := tl.m.b
			out = append(out, Unsure{From: e.At, To: e.At.Add(b.LocationStart + b.GossipRepair + tl.m.fresh + b.Tick + b.Slack),
				Why: "location " + e.Node + " started: it may serve any check as healthy (no verdict yet) or decide from the first regions it hears"})
		}
	}
	slices.SortStableFunc(out, func(a, b Unsure) int { return a.From.Compare(b.From) })
	return out
}
