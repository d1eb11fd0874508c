package oracle

import (
	"maps"
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
		w.apply(e)
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

// memory is an old value of one factor of one region of a view that a location may still
// act on until a time: the transition of that factor after an event.
type memory struct {
	idx         int // the region's index in the view
	from, until time.Time
	rv          regionView // the old values; only the factors that changed are set
}

// apply returns v with m's old values added.
func (m memory) apply(v view) view {
	out := slices.Clone(v)
	rv := &out[m.idx]
	rv.heard |= m.rv.heard
	rv.probe |= m.rv.probe
	if m.rv.nHi > 0 || m.rv.nLo > 0 {
		rv.nLo, rv.nHi = min(rv.nLo, m.rv.nLo), max(rv.nHi, m.rv.nHi)
	}
	return out
}

// probedLane computes the lane of the probed check c at location node n from its views in
// every world: the current view, and each factor's old value for its own transition window.
func (tl *timelines) probedLane(n Node, c *config.Check, views []view) *lane {
	m, slack := tl.m, tl.m.b.Slack
	l := &lane{trans: make([]transition, len(tl.run.Events))}
	var mems []memory
	var cs []contrib
	for i, e := range tl.run.Events {
		before, after := views[i], views[i+1]
		tr := transition{before: settledServed(c, before), after: settledServed(c, after)}
		tr.transit = tr.before | tr.after
		from := e.At.Add(-slack)
		more, window := tl.memories(c, i, before, after)
		mems = append(mems, more...)
		tr.window = window
		if tr.window > 0 {
			s, short := verdicts(c, tl.viewAt(from, views, mems))
			if short {
				s |= servedOn
				tr.window += m.hold
			}
			tr.transit |= s
		}
		if e.Kind == EventStart && e.Node == n.Name {
			ct, s, rw := tl.started(c, e.At, after)
			cs = append(cs, ct)
			tr.restart, tr.transit, tr.window = true, tr.transit|s|servedOn, max(tr.window, rw)
		}
		l.trans[i] = tr
	}
	l.segs = mergeContribs(append(cs, tl.sweep(c, views, mems)...))
	return l
}

// viewAt returns the view of views in force at t (switching Slack early), with the old values
// of the memories in mems that hold at t.
func (tl *timelines) viewAt(t time.Time, views []view, mems []memory) view {
	slack := tl.m.b.Slack
	k := sort.Search(len(tl.run.Events), func(k int) bool { return tl.run.Events[k].At.Add(-slack).After(t) })
	v := views[k]
	for _, mm := range mems {
		if !mm.from.After(t) && mm.until.After(t) {
			v = mm.apply(v)
		}
	}
	return v
}

// memories returns the memories of the factors of check c that event i changed, turning the
// view before into after, and the widest transition window among them (zero for none).
func (tl *timelines) memories(c *config.Check, i int, before, after view) ([]memory, time.Duration) {
	m, slack, e := tl.m, tl.m.b.Slack, tl.run.Events[i]
	from := e.At.Add(-slack)
	common := max(tl.worlds[i].worstDelay(), tl.worlds[i+1].worstDelay())*time.Duration(len(m.topo.Regions)) + m.b.Spread + m.b.Tick + slack
	wide := widen(before, after, tl.worlds[i], tl.worlds[i+1], m)
	var mems []memory
	var window time.Duration
	for k := range before {
		fw := m.factorWindows(c, before[k], after[k], wide[k])
		old := regionView{}
		if fw.heard > 0 {
			old.heard = before[k].heard
		}
		if fw.probe > 0 {
			old.probe = before[k].probe
		}
		if fw.n > 0 {
			old.nLo, old.nHi = wide[k].nLo, wide[k].nHi
		}
		for _, w := range []time.Duration{fw.heard, fw.probe, fw.n} {
			if w > 0 {
				mems = append(mems, memory{idx: k, from: from, until: e.At.Add(w + common), rv: old})
				window = max(window, w+common)
			}
		}
	}
	return mems, window
}

// started returns what a location started at `at` may serve of check c until it has decided,
// with after the view from then on: the contribution, the verdicts it may reach first, and
// how long that lasts.
func (tl *timelines) started(c *config.Check, at time.Time, after view) (contrib, served, time.Duration) {
	m := tl.m
	// A started location has no verdict: it serves every check (fail open) until it
	// has decided, from whichever regions' reports reach it first.
	blind := slices.Clone(after)
	for j := range blind {
		blind[j].heard |= no
	}
	s, _ := verdicts(c, blind)
	rw := m.b.LocationStart + m.b.GossipRepair + m.fresh + m.b.Tick + m.b.Slack
	return contrib{from: at, to: at.Add(rw), mask: s | servedOn}, s, rw
}

// sweep returns what a location may serve of check c between two instants where the view or
// a memory changes: whatever the mix allows; too few fresh reports hold the last value for
// the hold, then serve the check as unknown (healthy).
func (tl *timelines) sweep(c *config.Check, views []view, mems []memory) []contrib {
	m, slack := tl.m, tl.m.b.Slack
	points := []time.Time{tl.worldStart(0), tl.worldEnd(len(tl.run.Events))}
	for _, e := range tl.run.Events {
		points = append(points, e.At.Add(-slack))
	}
	for _, mm := range mems {
		points = append(points, mm.from, mm.until)
	}
	slices.SortFunc(points, func(a, b time.Time) int { return a.Compare(b) })
	points = slices.CompactFunc(points, func(a, b time.Time) bool { return a.Equal(b) })
	var cs []contrib
	var prev served
	for k := 0; k+1 < len(points); k++ {
		s, short := verdicts(c, tl.viewAt(points[k], views, mems))
		if short {
			cs = append(cs, contrib{from: points[k], to: points[k+1].Add(m.hold), mask: prev | s})
			s |= servedOn
		}
		cs = append(cs, contrib{from: points[k], to: points[k+1], mask: s})
		prev = s
	}
	return cs
}

// factorWindows are the transition windows of one region's factors after an event: zero for
// a factor that did not change.
type factorWindows struct{ heard, probe, n time.Duration }

// factorWindows returns how long a location may still act on the old values of a region's
// factors after an event turned a into b (wide: a with the handoff's report counts).
func (m *model) factorWindows(c *config.Check, a, b, wide regionView) factorWindows {
	p := params(c)
	var fw factorWindows
	if a.heard != b.heard {
		if a.heard&yes != 0 && b.heard&no != 0 {
			fw.heard = max(fw.heard, m.fresh) // reports stop arriving: stale after the freshness window
		}
		if a.heard&no != 0 && b.heard&yes != 0 {
			fw.heard = max(fw.heard, m.b.GossipRepair)
		}
	}
	if a.probe != b.probe {
		if a.probe&yes != 0 && b.probe&no != 0 {
			fw.probe = max(fw.probe, p.interval*time.Duration(p.failures)+p.timeout)
		}
		if a.probe&no != 0 && b.probe&yes != 0 {
			fw.probe = max(fw.probe, p.interval*time.Duration(p.successes)+p.timeout)
		}
	}
	if a.nLo != b.nLo || a.nHi != b.nHi || wide.nLo != a.nLo || wide.nHi != a.nHi {
		fw.n = m.b.Membership + m.fresh + p.interval*time.Duration(max(p.failures, p.successes)) + p.timeout
	}
	return fw
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
	for _, why := range slices.Sorted(maps.Keys(byWorld)) {
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
