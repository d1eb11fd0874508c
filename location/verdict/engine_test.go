package verdict

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/quorum"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is what a location holds, written plainly: the reference the engine is checked
// against. fullPass decides every check from it the way the location did before the engine
// (every check, every pass, children before parents).
type world struct {
	doc      *config.Document
	reports  map[string]map[string]gossip.Entry // check -> checker -> report
	progress map[string]time.Time
	region   map[string]string
	verdicts map[string]quorum.Verdict
}

// gossipEntry is a gossip entry with a status (when known: healthy or not) and a 1 ms latency.
func gossipEntry(known, healthy bool) gossip.Entry {
	e := gossip.Entry{Latency: time.Millisecond}
	switch {
	case known && healthy:
		e.Status = checker.StatusHealthy
	case known:
		e.Status = checker.StatusUnhealthy
	}
	return e
}

func newWorld(doc *config.Document) *world {
	return &world{doc: doc, reports: map[string]map[string]gossip.Entry{}, progress: map[string]time.Time{},
		region: map[string]string{}, verdicts: map[string]quorum.Verdict{}}
}

func (w *world) quorumReports(check string) []quorum.Report {
	var out []quorum.Report
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range w.reports[check] {
			if !yield(k) {
				return
			}
		}
	}) {
		r := w.reports[check][k]
		if r.Status == checker.StatusUnknown {
			continue
		}
		out = append(out, quorum.Report{Checker: k, Region: w.region[k], Healthy: r.Status == checker.StatusHealthy, LastProgress: w.progress[k]})
	}
	return out
}

// fullPass decides every check at now, from the previous pass's verdicts.
func (w *world) fullPass(now time.Time) {
	next := map[string]quorum.Verdict{}
	index := w.doc.CheckIndex()
	for _, id := range w.doc.EvalOrder() {
		c := &w.doc.Checks[index[id]]
		prev := w.verdicts[id]
		if c.Protocol == config.ProtocolCalculated {
			kids := make([]quorum.Verdict, len(c.Children))
			for i, ch := range c.Children {
				kids[i] = next[ch]
			}
			next[id] = quorum.Combine(c.MinHealthy, kids, c.Inverted, c.Disabled, prev, now)
			continue
		}
		next[id] = quorum.Evaluate(quorum.PolicyFor(*c, w.doc.Quorum), w.quorumReports(id), nil, prev, now)
	}
	w.verdicts = next
}

// randomDoc returns a document of probed checks with varied policies and calculated checks
// over them.
func randomDoc(rng *rand.Rand, probed, calculated int) *config.Document {
	doc := &config.Document{Regions: []string{"r1", "r2", "r3"}}
	doc.Quorum.FreshnessWindow = config.Duration(5 * time.Second)
	doc.Quorum.Hold = config.Duration(time.Duration(rng.IntN(3)) * 4 * time.Second)
	for i := range probed {
		doc.Checks = append(doc.Checks, config.Check{ID: fmt.Sprintf("p%d", i), Protocol: config.ProtocolHTTP,
			HealthyThreshold: []float64{0.18, 0.5, 0.99}[rng.IntN(3)], MinReporters: 1 + rng.IntN(3),
			Inverted: rng.IntN(10) == 0, Disabled: rng.IntN(15) == 0})
	}
	for i := range calculated {
		c := config.Check{ID: fmt.Sprintf("c%d", i), Protocol: config.ProtocolCalculated, Inverted: rng.IntN(6) == 0}
		for range 1 + rng.IntN(3) {
			// children among the probed checks and the earlier calculated ones
			if j := rng.IntN(probed + i); j < probed {
				c.Children = append(c.Children, fmt.Sprintf("p%d", j))
			} else {
				c.Children = append(c.Children, fmt.Sprintf("c%d", j-probed))
			}
		}
		c.MinHealthy = rng.IntN(len(c.Children) + 1)
		doc.Checks = append(doc.Checks, c)
	}
	return doc
}

// TestEngineMatchesFullPass drives the engine and the full pass with the same random events
// at the same times (reports set, changed, removed; checkers heard, silent, gone; holds;
// configuration changes) and checks, after every step, that every check's verdict is the
// same: state, rule, since, held-since and counts. A second engine takes each configuration
// change as the checks it changed (ConfigureChecks), as a location does, and must agree too.
func TestEngineMatchesFullPass(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 42))
		doc := randomDoc(rng, 12, 5)
		w := newWorld(doc)
		e, inc := New(), New()
		e.Configure(doc)
		inc.Configure(doc)
		both := func(f func(e *Engine)) { f(e); f(inc) }
		checkers := []string{"a", "b", "c", "d", "e"}
		now := t0
		for step := range 400 {
			now = now.Add(time.Duration(rng.IntN(2500)) * time.Millisecond)
			mutated := false // one configuration change a step: the full pass sees no change between two passes
			for range rng.IntN(6) {
				k := checkers[rng.IntN(len(checkers))]
				switch x := rng.IntN(20); {
				case x < 8: // a report set or changed
					check := fmt.Sprintf("p%d", rng.IntN(14)) // two ids the configuration may lack
					known, healthy := rng.IntN(8) != 0, rng.IntN(3) != 0
					r := gossipEntry(known, healthy)
					if w.reports[check] == nil {
						w.reports[check] = map[string]gossip.Entry{}
					}
					w.reports[check][k] = r
					both(func(e *Engine) { e.SetReport(check, k, r) })
				case x < 10: // withdrawn
					check := fmt.Sprintf("p%d", rng.IntN(14))
					delete(w.reports[check], k)
					both(func(e *Engine) { e.DeleteReport(check, k) })
				case x < 17: // progress (now or never)
					p := now.Add(-time.Duration(rng.IntN(3000)) * time.Millisecond) // heard a while ago, drained now
					if x == 16 {
						p = time.Time{}
					}
					w.progress[k], w.region[k] = p, "r"+k
					both(func(e *Engine) { e.Progress(k, "r"+k, p) })
				case x < 18: // the row is gone
					for _, m := range w.reports {
						delete(m, k)
					}
					delete(w.progress, k)
					both(func(e *Engine) { e.RemoveChecker(k) })
				default: // a configuration change
					if mutated {
						continue
					}
					mutated = true
					old := doc
					doc = mutate(rng, doc)
					w.doc = doc
					e.Configure(doc)
					if old.Quorum != doc.Quorum {
						inc.Configure(doc)
					} else {
						inc.ConfigureChecks(changedChecks(old, doc), func(id string) (*config.Check, bool) {
							c, ok := doc.CheckByID(id)
							return c, ok
						})
					}
				}
			}
			w.fullPass(now)
			e.Advance(now)
			inc.Advance(now)
			compare(t, seed, step, e, w)
			compare(t, seed, step, inc, w)
			if t.Failed() {
				return
			}
		}
	}
}

// mutate returns a copy of doc with one change: a policy, a calculated check's children, a
// check added or removed, or the freshness window.
func mutate(rng *rand.Rand, doc *config.Document) *config.Document {
	d := *doc
	d.Checks = slices.Clone(doc.Checks)
	op := rng.IntN(5)
	if len(d.Checks) == 0 {
		op = 3
	}
	switch op {
	case 0:
		i := rng.IntN(len(d.Checks))
		if d.Checks[i].Protocol != config.ProtocolCalculated {
			d.Checks[i].MinReporters = 1 + rng.IntN(3)
		}
	case 1:
		i := rng.IntN(len(d.Checks))
		d.Checks[i].Inverted = !d.Checks[i].Inverted
	case 2: // remove a probed check no calculated check combines
		i := rng.IntN(len(d.Checks))
		id := d.Checks[i].ID
		for _, c := range d.Checks {
			if slices.Contains(c.Children, id) {
				return &d
			}
		}
		d.Checks = slices.Delete(d.Checks, i, i+1)
	case 3: // add one back
		for j := range 14 {
			id := fmt.Sprintf("p%d", j)
			if _, ok := d.CheckByID(id); !ok {
				d.Checks = append(d.Checks, config.Check{ID: id, Protocol: config.ProtocolHTTP, HealthyThreshold: 0.18, MinReporters: 1})
				break
			}
		}
	case 4:
		d.Quorum.FreshnessWindow = config.Duration(time.Duration(3+rng.IntN(5)) * time.Second)
	}
	return &d
}

// changedChecks returns the ids of the checks that differ between two documents: added,
// removed or changed.
func changedChecks(a, b *config.Document) []string {
	var out []string
	for _, c := range a.Checks {
		if d, ok := b.CheckByID(c.ID); !ok || !reflect.DeepEqual(c, *d) {
			out = append(out, c.ID)
		}
	}
	for _, c := range b.Checks {
		if _, ok := a.CheckByID(c.ID); !ok {
			out = append(out, c.ID)
		}
	}
	return out
}

func compare(t *testing.T, seed uint64, step int, e *Engine, w *world) {
	t.Helper()
	got := map[string]quorum.Verdict{}
	e.Each(nil, func(id string, v quorum.Verdict) { got[id] = v })
	if len(got) != len(w.verdicts) {
		t.Errorf("seed %d step %d: engine holds %d verdicts, full pass %d", seed, step, len(got), len(w.verdicts))
	}
	for id, want := range w.verdicts {
		v, ok := got[id]
		switch {
		case !ok:
			t.Errorf("seed %d step %d: %s: no verdict, full pass %s (%s)", seed, step, id, want.State, want.Sentence())
		case v.State != want.State || v.Rule != want.Rule || !v.Since.Equal(want.Since) || !v.HeldSince.Equal(want.HeldSince) || v.Counts != want.Counts:
			t.Errorf("seed %d step %d: %s:\n engine    %s %s since %v held %v %+v\n full pass %s %s since %v held %v %+v",
				seed, step, id, v.State, v.Rule, v.Since.Sub(t0), v.HeldSince.Sub(t0), v.Counts,
				want.State, want.Rule, want.Since.Sub(t0), want.HeldSince.Sub(t0), want.Counts)
		}
	}
	for id, want := range w.verdicts {
		if x, ok := e.Explain(id, nil, nil); !ok || x.State != want.State || x.Counts != want.Counts {
			t.Errorf("seed %d step %d: %s: explained %s %+v (%v), full pass %s %+v", seed, step, id, x.State, x.Counts, ok, want.State, want.Counts)
		}
	}
	var counts [3]int
	for _, v := range w.verdicts {
		counts[v.State]++
	}
	if conf, dec := e.Len(); conf != len(w.doc.Checks) || dec != len(w.verdicts) {
		t.Errorf("seed %d step %d: Len %d configured, %d decided; want %d, %d", seed, step, conf, dec, len(w.doc.Checks), len(w.verdicts))
	}
	if counts != e.Counts() {
		t.Errorf("seed %d step %d: counts %v, full pass %v", seed, step, e.Counts(), counts)
	}
}

// TestEngineChanges: Changes hands out each changed check once, with its state now, and
// checks that leave the configuration as removed.
func TestEngineChanges(t *testing.T) {
	doc := &config.Document{Checks: []config.Check{
		{ID: "web", Protocol: config.ProtocolHTTP, HealthyThreshold: 0.18, MinReporters: 1},
		{ID: "api", Protocol: config.ProtocolHTTP, HealthyThreshold: 0.18, MinReporters: 1},
	}}
	doc.Quorum.FreshnessWindow = config.Duration(10 * time.Second)
	e := New()
	e.Configure(doc)
	e.Progress("a", "r1", t0)
	e.SetReport("web", "a", gossipEntry(true, false))
	e.Advance(t0)
	got := e.Changes(nil)
	slices.SortFunc(got, func(a, b Change) int { return cmpString(a.Check, b.Check) })
	want := []Change{{Check: "api", State: quorum.StateUnknown}, {Check: "web", State: quorum.StateUnhealthy}}
	if !slices.Equal(got, want) {
		t.Fatalf("first changes %+v, want %+v", got, want)
	}
	// Healthy, then unhealthy again before anyone looks: one change, as it stands.
	e.SetReport("web", "a", gossipEntry(true, true))
	e.Advance(t0.Add(time.Second))
	e.SetReport("web", "a", gossipEntry(true, false))
	e.Advance(t0.Add(2 * time.Second))
	if got := e.Changes(nil); !slices.Equal(got, []Change{{Check: "web", State: quorum.StateUnhealthy}}) {
		t.Fatalf("changes %+v, want web unhealthy once", got)
	}
	// Nothing happened: nothing to hand out, nothing re-decided.
	before := e.Stats().Evaluations
	e.Advance(t0.Add(3 * time.Second))
	if got := e.Changes(nil); len(got) != 0 || e.Stats().Evaluations != before {
		t.Fatalf("idle advance: changes %+v, %d evaluations", got, e.Stats().Evaluations-before)
	}
	// The checker goes silent: at the moment it goes stale, web is re-decided.
	if at, ok := e.Next(); !ok || !at.Equal(t0.Add(10*time.Second+time.Nanosecond)) {
		t.Fatalf("next timer %v (%v), want the moment a goes stale", at, ok)
	}
	e.Advance(t0.Add(11 * time.Second))
	if got := e.Changes(nil); !slices.Equal(got, []Change{{Check: "web", State: quorum.StateUnknown}}) {
		t.Fatalf("after staleness: %+v, want web unknown", got)
	}
	// web leaves the configuration.
	e.Configure(&config.Document{Checks: doc.Checks[1:], Quorum: doc.Quorum})
	e.Advance(t0.Add(12 * time.Second))
	if got := e.Changes(nil); !slices.Equal(got, []Change{{Check: "web", Removed: true}}) || !got[0].Serving() {
		t.Fatalf("after removal: %+v, want web removed (served)", got)
	}
	if _, ok := e.Verdict("web", nil); ok {
		t.Fatal("a removed check still has a verdict")
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestEngineHeartbeatCostsNothing: a fresh checker's progress re-decides nothing, and a
// checker going stale re-decides only its own checks.
func TestEngineHeartbeatCostsNothing(t *testing.T) {
	doc := &config.Document{}
	doc.Quorum.FreshnessWindow = config.Duration(5 * time.Second)
	for i := range 1000 {
		doc.Checks = append(doc.Checks, config.Check{ID: fmt.Sprintf("k%d", i), Protocol: config.ProtocolTCP, HealthyThreshold: 0.18, MinReporters: 1})
	}
	e := New()
	e.Configure(doc)
	for i := range 1000 {
		k := "a"
		if i%10 == 0 {
			k = "b" // b reports 100 checks
		}
		e.SetReport(fmt.Sprintf("k%d", i), k, gossipEntry(true, true))
	}
	e.Progress("a", "r1", t0)
	e.Progress("b", "r2", t0)
	e.Advance(t0)
	e.Changes(nil)
	before := e.Stats().Evaluations
	for s := 1; s <= 20; s++ {
		now := t0.Add(time.Duration(s) * time.Second / 2)
		e.Progress("a", "r1", now)
		if s <= 2 {
			e.Progress("b", "r2", now)
		}
		e.Advance(now)
	}
	// b was last heard at 1s: it went stale after 6s; a never did.
	if got := e.Stats().Evaluations - before; got != 100 {
		t.Fatalf("%d checks re-decided, want 100 (b's, once)", got)
	}
	if c := e.Counts(); c[quorum.StateHealthy] != 900 || c[quorum.StateUnknown] != 100 {
		t.Fatalf("counts %v, want 900 healthy, 100 unknown", c)
	}
}

// TestEngineApplyAndExplain: a drain of the gossip feed is applied as its cells, then its rows;
// Explain takes each vote's reason, latency and sequence from the reports the table holds,
// and a report without a status counts for nothing.
func TestEngineApplyAndExplain(t *testing.T) {
	doc := &config.Document{Checks: []config.Check{{ID: "web", Protocol: config.ProtocolHTTP, HealthyThreshold: 0.5, MinReporters: 1}}}
	doc.Quorum.FreshnessWindow = config.Duration(10 * time.Second)
	e := New()
	e.Configure(doc)
	e.Apply(&gossip.Changes{
		Cells: []gossip.CellChange{
			{Checker: "a", Check: "web", Present: true, Entry: gossip.Entry{Status: checker.StatusHealthy, Latency: time.Millisecond}},
			{Checker: "b", Check: "web", Present: true, Entry: gossip.Entry{Status: checker.StatusUnhealthy}},
			{Checker: "c", Check: "web", Present: true, Entry: gossip.Entry{}},
		},
		Rows: []gossip.RowChange{{Checker: "a", Region: "r1", Progress: t0}, {Checker: "b", Region: "r2", Progress: t0},
			{Checker: "c", Region: "r3", Progress: t0}},
	})
	e.Advance(t0)
	held := []quorum.Report{
		{Checker: "a", Region: "r1", Healthy: true, Reason: "http 200", Latency: 2 * time.Millisecond, Sequence: 7, LastProgress: t0},
		{Checker: "b", Region: "r2", Reason: "http 503", Sequence: 9, LastProgress: t0},
	}
	x, ok := e.Explain("web", []string{"a", "b", "c"}, held)
	if !ok || x.State != quorum.StateUnhealthy || x.Counts.Healthy != 1 || x.Counts.Unhealthy != 1 || x.Counts.NeverHeard != 1 {
		t.Fatalf("explained %s %+v (%v), want unhealthy: 1 healthy, 1 unhealthy, c never heard", x.State, x.Counts, ok)
	}
	for _, v := range x.Votes {
		want := held[slices.IndexFunc(held, func(r quorum.Report) bool { return r.Checker == v.Checker })]
		if v.Reason != want.Reason || v.Latency.Std() != want.Latency || v.Sequence != want.Sequence {
			t.Errorf("vote of %s: %q %v seq %d, want %q %v seq %d", v.Checker, v.Reason, v.Latency, v.Sequence, want.Reason, want.Latency, want.Sequence)
		}
	}
	// The row of b goes, and c decides healthy: the check is healthy, 2 of 2.
	e.Apply(&gossip.Changes{
		Cells: []gossip.CellChange{{Checker: "c", Check: "web", Present: true, Entry: gossip.Entry{Status: checker.StatusHealthy}}},
		Rows:  []gossip.RowChange{{Checker: "b", Gone: true}, {Checker: "c", Region: "r3", Progress: t0.Add(time.Second)}},
	})
	e.Advance(t0.Add(time.Second))
	if v, ok := e.Verdict("web", nil); !ok || v.State != quorum.StateHealthy || v.Counts.Healthy != 2 || v.Counts.Fresh != 2 {
		t.Fatalf("after b left: %s %+v (%v), want healthy 2 of 2", v.State, v.Counts, ok)
	}
}
