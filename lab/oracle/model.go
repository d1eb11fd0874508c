package oracle

import (
	"fmt"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// tri is the set of values a yes/no fact may have.
type tri uint8

// The values of a tri.
const (
	no     tri        = 1 << iota // surely not
	yes                           // surely
	either = no | yes             // unsure
)

// served is the set of values DNS may serve for a check.
type served uint8

// The values of served.
const (
	servedOff served = 1 << iota // served unhealthy
	servedOn                     // served healthy (healthy, or unknown: fail open)
	servedAny = servedOff | servedOn
)

// String says the set.
func (s served) String() string {
	switch s {
	case servedOff:
		return "unhealthy"
	case servedOn:
		return "healthy"
	case servedAny:
		return "either"
	}
	return "nothing"
}

// regionView is what one region's checkers give one check at one location: whether the
// location hears them, whether they reach the target, and how many report.
type regionView struct {
	region   string
	heard    tri
	probe    tri
	nLo, nHi int
	why      []string // what makes heard or probe unsure
}

// view is what a location may hold of one probed check, region by region.
type view []regionView

// merge returns the view holding every value of v and o (both of the same check).
func (v view) merge(o view) view {
	out := slices.Clone(v)
	for i := range out {
		out[i].heard |= o[i].heard
		out[i].probe |= o[i].probe
		out[i].nLo = min(out[i].nLo, o[i].nLo)
		out[i].nHi = max(out[i].nHi, o[i].nHi)
	}
	return out
}

// model holds what the oracle knows of a run's network: the document and the topology,
// indexed.
type model struct {
	doc    *config.Document
	topo   *Topology
	b      Bounds
	checks map[string]*config.Check
	target map[string]Target // probed check ID -> its target
	nodes  map[string]Node
	fresh  time.Duration
	hold   time.Duration
}

// newModel indexes r.
func newModel(r *Run, b Bounds) *model {
	m := &model{doc: r.Document, topo: &r.Topology, b: b, checks: map[string]*config.Check{},
		target: map[string]Target{}, nodes: map[string]Node{}}
	for i := range r.Document.Checks {
		c := &r.Document.Checks[i]
		m.checks[c.ID] = c
	}
	for id, name := range r.Topology.Checks {
		for _, t := range r.Topology.Targets {
			if t.Name == name {
				m.target[id] = t
			}
		}
	}
	for _, n := range r.Topology.Nodes {
		m.nodes[n.Name] = n
	}
	def := config.DefaultDocument().Quorum
	m.fresh, m.hold = r.Document.Quorum.FreshnessWindow.Std(), r.Document.Quorum.Hold.Std()
	if m.fresh <= 0 {
		m.fresh = def.FreshnessWindow.Std()
	}
	m.hold = max(m.hold, 0)
	return m
}

// checkParams are the settings of a check that the model uses, with defaults for a document
// built by hand.
type checkParams struct {
	interval, timeout              time.Duration
	failures, successes, perRegion int
	threshold                      float64
	minReporters                   int
	http                           bool
}

// params returns c's settings.
func params(c *config.Check) checkParams {
	d := config.DefaultCheck()
	p := checkParams{interval: c.Interval.Std(), timeout: c.Timeout.Std(), failures: c.FailureThreshold,
		successes: c.SuccessThreshold, perRegion: c.CheckersPerRegion, threshold: c.HealthyThreshold,
		minReporters: max(c.MinReporters, 1), http: c.Protocol != config.ProtocolTCP}
	if p.interval <= 0 {
		p.interval = d.Interval.Std()
	}
	if p.timeout <= 0 {
		p.timeout = d.Timeout.Std()
	}
	if p.failures <= 0 {
		p.failures = d.FailureThreshold
	}
	if p.successes <= 0 {
		p.successes = d.SuccessThreshold
	}
	if p.perRegion <= 0 {
		p.perRegion = d.CheckersPerRegion
	}
	return p
}

// ProbeTiming returns check c's probe interval, timeout and failure threshold, the
// configuration's defaults where c leaves them unset.
func ProbeTiming(c *config.Check) (interval, timeout time.Duration, failures int) {
	p := params(c)
	return p.interval, p.timeout, p.failures
}

// regionsOf returns the regions that probe c: its own, or every region of the topology.
func (m *model) regionsOf(c *config.Check) []string {
	if len(c.Regions) > 0 {
		return c.Regions
	}
	return m.topo.Regions
}

// heardFrom returns, for every pair (from, to) of regions, whether the gossip of from's
// checkers reaches a location in to under w, with why it is unsure where it is.
func (m *model) heardFrom(w *world) (map[[2]string]tri, map[[2]string][]string) {
	relays := map[string]bool{} // regions with a running data-plane node
	for _, n := range m.topo.Nodes {
		if !w.stopped[n.Name] && (n.Has(RoleChecker) || n.Has(RoleLocation)) {
			relays[n.Region] = true
		}
	}
	edge := func(a, b string) (tri, string) {
		d := w.delayOf(a, b)
		switch {
		case !w.carries(a, b):
			return no, ""
		case !w.carries(b, a):
			return either, fmt.Sprintf("gossip %s->%s over a link cut the other way", a, b)
		case w.lossy(a, b) > m.b.MaxLoss:
			return either, fmt.Sprintf("gossip %s->%s over a link losing %g%%", a, b, w.lossy(a, b))
		case 4*(d.Delay+d.Jitter) >= m.fresh:
			return either, fmt.Sprintf("gossip %s->%s over a link delaying %v±%v", a, b, d.Delay, d.Jitter)
		}
		return yes, ""
	}
	reach := func(from string, accept func(tri) bool) map[string]bool {
		seen := map[string]bool{from: true}
		queue := []string{from}
		for len(queue) > 0 {
			a := queue[0]
			queue = queue[1:]
			if a != from && !relays[a] {
				continue // nothing runs there to pass reports on
			}
			for _, b := range m.topo.Regions {
				if e, _ := edge(a, b); !seen[b] && accept(e) {
					seen[b] = true
					queue = append(queue, b)
				}
			}
		}
		return seen
	}
	out, why := map[[2]string]tri{}, map[[2]string][]string{}
	var unsure []string
	for _, a := range m.topo.Regions {
		for _, b := range m.topo.Regions {
			if e, reason := edge(a, b); e == either {
				unsure = append(unsure, reason)
			}
		}
	}
	for _, from := range m.topo.Regions {
		sure := reach(from, func(e tri) bool { return e == yes })
		maybe := reach(from, func(e tri) bool { return e != no })
		for _, to := range m.topo.Regions {
			k := [2]string{from, to}
			switch {
			case sure[to]:
				out[k] = yes
			case maybe[to]:
				out[k], why[k] = either, unsure
			default:
				out[k] = no
			}
		}
	}
	return out, why
}

// probe returns whether the checkers of region q reach the target t of a check with
// parameters p under w, and why not surely.
func (m *model) probe(w *world, q string, t Target, p checkParams) (tri, string) {
	switch {
	case w.down[t.Name]:
		return no, ""
	case !w.carries(q, t.Region) || !w.carries(t.Region, q):
		return no, ""
	case w.lossy(q, t.Region) > 0:
		return either, fmt.Sprintf("probes %s->%s over a link losing %g%%", q, t.Region, w.lossy(q, t.Region))
	}
	d := w.delayOf(q, t.Region)
	if d.Delay == 0 && d.Jitter == 0 {
		return yes, ""
	}
	// A probe takes at least one round trip (the connection) and at most two (an HTTP
	// request after it); a probe surely fits when twice its longest time fits.
	rounds := time.Duration(1)
	if p.http {
		rounds = 2
	}
	switch {
	case 2*(d.Delay-d.Jitter) >= p.timeout:
		return no, ""
	case 2*2*rounds*(d.Delay+d.Jitter) < p.timeout:
		return yes, ""
	}
	return either, fmt.Sprintf("probes %s->%s through %v±%v each way with a %v timeout", q, t.Region, d.Delay, d.Jitter, p.timeout)
}

// viewOf returns what a location in region loc may hold of the probed check c under w;
// heard is w's hearing (heardFrom).
func (m *model) viewOf(w *world, heard map[[2]string]tri, why map[[2]string][]string, loc string, c *config.Check) view {
	t := m.target[c.ID]
	p := params(c)
	var v view
	for _, q := range m.regionsOf(c) {
		running := 0
		for _, n := range m.topo.Nodes {
			if n.Region == q && n.Has(RoleChecker) && !w.stopped[n.Name] {
				running++
			}
		}
		n := min(running, p.perRegion)
		rv := regionView{region: q, heard: heard[[2]string{q, loc}], nLo: n, nHi: n}
		if rv.heard == either {
			rv.why = append(rv.why, why[[2]string{q, loc}]...)
		}
		var reason string
		rv.probe, reason = m.probe(w, q, t, p)
		if reason != "" {
			rv.why = append(rv.why, reason)
		}
		v = append(v, rv)
	}
	return v
}

// verdicts returns what DNS may serve of the probed check c when a location holds v, and
// whether it may hold too few fresh reports (then it holds its last verdict, then serves
// the check as unknown: healthy).
func verdicts(c *config.Check, v view) (served, bool) {
	if c.Disabled {
		return servedOn, false
	}
	p := params(c)
	type count struct{ fresh, healthy int }
	sums := map[count]bool{{}: true}
	for _, rv := range v {
		var opts []count
		if rv.heard&no != 0 {
			opts = append(opts, count{})
		}
		if rv.heard&yes != 0 {
			for n := rv.nLo; n <= rv.nHi; n++ {
				if rv.probe&yes != 0 {
					opts = append(opts, count{n, n})
				}
				if rv.probe&no != 0 {
					opts = append(opts, count{n, 0})
				}
				if rv.probe == either {
					for h := 1; h < n; h++ {
						opts = append(opts, count{n, h})
					}
				}
			}
		}
		next := map[count]bool{}
		for s := range sums {
			for _, o := range opts {
				next[count{s.fresh + o.fresh, s.healthy + o.healthy}] = true
			}
		}
		sums = next
	}
	var out served
	short := false
	for s := range sums {
		if s.fresh < p.minReporters {
			short = true
			continue
		}
		healthy := float64(s.healthy)/float64(s.fresh) > p.threshold
		if healthy != c.Inverted {
			out |= servedOn
		} else {
			out |= servedOff
		}
	}
	return out, short
}

// settledServed returns what DNS serves of a probed check once a location has settled on v:
// too few fresh reports end as unknown, served healthy.
func settledServed(c *config.Check, v view) served {
	s, short := verdicts(c, v)
	if short {
		s |= servedOn
	}
	return s
}

// combine returns what DNS may serve of the calculated check c whose children may be served
// as children says (an unknown child counts as healthy: it is served so).
func combine(c *config.Check, children []served) served {
	if c.Disabled {
		return servedOn
	}
	need := c.MinHealthy
	if need <= 0 {
		need = len(children)
	}
	lo, hi := 0, 0 // the fewest and the most children that may be served healthy
	for _, s := range children {
		if s == servedOn {
			lo++
		}
		if s&servedOn != 0 {
			hi++
		}
	}
	var out served
	if hi >= need {
		out |= servedOn
	}
	if lo < need {
		out |= servedOff
	}
	if c.Inverted {
		out = (out&servedOn)>>1 | (out&servedOff)<<1
	}
	return out
}
