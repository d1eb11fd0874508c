package agent

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/verdict"
	"github.com/vigil-dns/vigil/quorum"
)

// A location's evaluation by a full pass, without the verdict engine, re-created here as the
// baseline of BenchmarkFullPassVsEngine. Every 500 ms it copied every report out of the gossip table
// under the gossip lock and sorted them (gossip.Table.Reports), grouped them by check in a
// map, decided every check with quorum.Evaluate in evaluation order, built three maps of
// the results, replaced the DNS server's verdicts whole (location.Server.SetVerdicts) and set
// the per-check and per-report gauges from all of it. The gossip table is mirrored by
// passTable, which stores its cells as gossip/cells.go does (a map of 24-byte cells per row,
// check ids and reasons interned), so that its copy costs what Table.Reports costs.

// passCell is gossip's heldCell.
type passCell struct {
	seq         uint64
	latency     uint32
	consecutive uint32
	reason      uint32
	status      checker.Status
}

// passReport is the gossip.Report that the table's reads handed out then (a location's view
// of one report: the entry with its check, checker, region, sequence and progress).
type passReport struct {
	Check, Checker, Region string
	Entry                  gossip.Entry
	Seq                    uint64
	LastProgress           time.Time
}

// passRow is one checker's row of passTable.
type passRow struct {
	checker, region string
	progress        time.Time
	cells           map[uint32]passCell
}

// passTable mirrors a location's gossip table.
type passTable struct {
	rows    map[string]*passRow
	checks  []string // interned check ids
	reasons []string
	reports int
}

// reportsSorted is gossip.Table.Reports (as it was then) followed by gossip.Node.regions (which filled in
// regions from membership; every row here has its region, so the last loop only walks the
// reports, as that one did): every report, sorted by check then checker.
func (t *passTable) reportsSorted() []passReport {
	out := make([]passReport, 0, t.reports)
	for _, r := range t.rows {
		for i, c := range r.cells {
			e := gossip.Entry{Status: c.status, Consecutive: c.consecutive,
				Latency: time.Duration(c.latency) * time.Microsecond, Reason: t.reasons[c.reason]}
			out = append(out, passReport{Check: t.checks[i], Checker: r.checker, Region: r.region,
				Entry: e, Seq: c.seq, LastProgress: r.progress})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Check != out[j].Check {
			return out[i].Check < out[j].Check
		}
		return out[i].Checker < out[j].Checker
	})
	for i := range out {
		if out[i].Region == "" {
			out[i].Region = "unknown" // the full pass's label for a region not known
		}
	}
	return out
}

// passMetrics are the location gauges the full pass sets from everything it decided.
type passMetrics struct {
	verdicts  *prometheus.GaugeVec
	changes   *prometheus.CounterVec
	lastHeard *prometheus.GaugeVec
	votes     *prometheus.GaugeVec
	latency   *prometheus.GaugeVec
	fresh     prometheus.Gauge
	known     prometheus.Gauge
	expected  prometheus.Gauge
	states    *prometheus.GaugeVec
	seconds   prometheus.Histogram
}

func newPassMetrics() *passMetrics {
	g := func(name string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: name}, labels)
	}
	return &passMetrics{
		verdicts:  g("verdict", "check", "state"),
		changes:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "changes", Help: "changes"}, []string{"check", "state"}),
		lastHeard: g("last_heard", "checker", "region"),
		votes:     g("votes", "check", "region", "vote"),
		latency:   g("latency", "check", "region"),
		fresh:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "fresh", Help: "fresh"}),
		known:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "known", Help: "known"}),
		expected:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "expected", Help: "expected"}),
		states:    g("states", "state"),
		seconds:   prometheus.NewHistogram(prometheus.HistogramOpts{Name: "seconds", Help: "seconds"}),
	}
}

// observe sets the full pass's gauges from everything it decided.
func (m *passMetrics) observe(verdicts map[string]quorum.Verdict, reports []passReport, plan *shard.Plan, doc *config.Document, now time.Time, seconds float64) {
	var counts [3]int
	for _, v := range verdicts {
		if int(v.State) < len(counts) {
			counts[v.State]++
		}
	}
	for s, c := range counts {
		m.states.WithLabelValues(quorum.State(s).String()).Set(float64(c))
	}
	m.seconds.Observe(seconds)
	m.verdicts.Reset()
	for id, v := range verdicts {
		for _, s := range []quorum.State{quorum.StateUnknown, quorum.StateHealthy, quorum.StateUnhealthy} {
			val := 0.0
			if v.State == s {
				val = 1
			}
			m.verdicts.WithLabelValues(id, s.String()).Set(val)
		}
	}
	window := doc.Quorum.FreshnessWindow.Std()
	m.votes.Reset()
	m.latency.Reset()
	last := make(map[[2]string]time.Time)
	maxLatency := make(map[[2]string]float64)
	for _, r := range reports {
		region := r.Region
		vote := "stale"
		if quorum.Fresh(r.LastProgress, now, window) {
			vote = r.Entry.Status.String()
			k := [2]string{r.Check, region}
			maxLatency[k] = max(maxLatency[k], r.Entry.Latency.Seconds())
		}
		m.votes.WithLabelValues(r.Check, region, vote).Inc()
		k := [2]string{r.Checker, r.Region}
		if r.LastProgress.After(last[k]) || last[k].IsZero() {
			last[k] = r.LastProgress
		}
	}
	for k, v := range maxLatency {
		m.latency.WithLabelValues(k[0], k[1]).Set(v)
	}
	m.lastHeard.Reset()
	fresh := 0
	for k, t := range last {
		age := now.Sub(t)
		m.lastHeard.WithLabelValues(k[0], k[1]).Set(age.Seconds())
		if age <= window {
			fresh++
		}
	}
	m.fresh.Set(float64(fresh))
	m.known.Set(float64(len(last)))
	expected := map[string]bool{}
	for _, id := range plan.Checks() {
		for _, r := range doc.Regions {
			for _, c := range plan.Shard(id, r) {
				expected[c] = true
			}
		}
	}
	m.expected.Set(float64(len(expected)))
}

// passInput is the full pass's input of a probed check, kept for explanations.
type passInput struct {
	policy   quorum.Policy
	reports  []quorum.Report
	expected []string
	prev     quorum.Verdict
}

// fullPass is the full-pass location: its table, its verdicts and the DNS server it installs into.
type fullPass struct {
	doc      *config.Document
	plan     *shard.Plan
	table    *passTable
	dns      *location.Server
	m        *passMetrics
	verdicts map[string]quorum.Verdict
	inputs   map[string]passInput
	metrics  bool
}

// evaluate decides the probed checks, as the full pass does.
func (p *fullPass) evaluate(now time.Time) {
	t0 := time.Now()
	held := p.table.reportsSorted()
	byCheck := map[string][]quorum.Report{}
	for _, r := range held {
		if r.Entry.Status == checker.StatusUnknown {
			continue
		}
		byCheck[r.Check] = append(byCheck[r.Check], quorum.Report{
			Checker: r.Checker, Region: r.Region, Healthy: r.Entry.Status == checker.StatusHealthy,
			Reason: r.Entry.Reason, Latency: r.Entry.Latency, Sequence: r.Seq, LastProgress: r.LastProgress,
		})
	}
	prevs := p.verdicts
	verdicts := make(map[string]quorum.Verdict, len(p.doc.Checks))
	inputs := make(map[string]passInput, len(p.doc.Checks))
	serving := make(map[string]bool, len(p.doc.Checks))
	for _, id := range p.doc.EvalOrder() {
		c, _ := p.doc.CheckByID(id)
		prev := prevs[id]
		in := passInput{policy: quorum.PolicyFor(*c, p.doc.Quorum), reports: byCheck[id], prev: prev}
		for _, r := range c.Regions {
			in.expected = append(in.expected, p.plan.Shard(id, r)...)
		}
		v := quorum.Evaluate(in.policy, in.reports, in.expected, prev, now)
		if p.metrics && (prev.State != v.State || prev.At.IsZero()) {
			p.m.changes.WithLabelValues(id, v.State.String()).Inc()
		}
		verdicts[id], inputs[id], serving[id] = v, in, v.Serving()
	}
	p.dns.SetVerdicts(serving)
	p.verdicts, p.inputs = verdicts, inputs
	if p.metrics {
		p.m.observe(verdicts, held, p.plan, p.doc, now, time.Since(t0).Seconds())
	}
}

// passFixture is the report set both sides are driven by: checks probed checks, each with a
// multivalue record set that it decides, reported healthy by 6 checkers (2 in each of 3
// regions).
type passFixture struct {
	doc      *config.Document
	checkers []string
	regions  []string
}

func newPassFixture(checks int) passFixture {
	s := config.Scale{Checks: checks, Protocol: config.ProtocolHTTP}
	f := passFixture{doc: s.Document()}
	for i := range f.doc.Zones {
		f.doc.Zones[i].NameServers = []string{"ns1.scale.test.", "ns2.scale.test."}
	}
	for _, r := range f.doc.Regions {
		for k := 1; k <= 2; k++ {
			f.checkers = append(f.checkers, fmt.Sprintf("chk-%s-%d", r, k))
			f.regions = append(f.regions, r)
		}
	}
	return f
}

// server returns a DNS server (no sockets) holding the fixture's zones.
func (f passFixture) server(tb testing.TB) *location.Server {
	s, err := location.New(location.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		tb.Fatal(err)
	}
	snap, err := location.NewSnapshot(f.doc.Zones, nil)
	if err != nil {
		tb.Fatal(err)
	}
	s.SetSnapshot(snap)
	return s
}

// flip returns the checks whose reports the i-th changing tick turns (1% of them, a
// different 1% each time) and the status they turn to.
func (f passFixture) flip(i int) (lo, hi int, status checker.Status) {
	n := len(f.doc.Checks)
	step := max(n/100, 1)
	lo = (i * step) % n
	hi = min(lo+step, n)
	status = checker.StatusUnhealthy
	if (i*step/n)%2 == 1 {
		status = checker.StatusHealthy
	}
	return lo, hi, status
}

// fullPass returns the full-pass location holding the fixture's reports, not yet evaluated.
func (f passFixture) fullPass(tb testing.TB, metrics bool, now time.Time) *fullPass {
	m := shard.Membership{}
	for i, c := range f.checkers {
		m[f.regions[i]] = append(m[f.regions[i]], c)
	}
	plan, err := shard.NewPlan(f.doc, m)
	if err != nil {
		tb.Fatal(err)
	}
	t := &passTable{rows: map[string]*passRow{}, reasons: []string{""}}
	for _, c := range f.doc.Checks {
		t.checks = append(t.checks, c.ID)
	}
	for i, name := range f.checkers {
		r := &passRow{checker: name, region: f.regions[i], progress: now, cells: map[uint32]passCell{}}
		for j := range f.doc.Checks {
			r.cells[uint32(j)] = passCell{seq: uint64(j + 1), latency: 1000, consecutive: 3, status: checker.StatusHealthy}
		}
		t.rows[name] = r
		t.reports += len(f.doc.Checks)
	}
	return &fullPass{doc: f.doc, plan: plan, table: t, dns: f.server(tb), m: newPassMetrics(), metrics: metrics}
}

// enginePass is the location of today: the verdict engine and the DNS server it patches.
type enginePass struct {
	e     *verdict.Engine
	dns   *location.Server
	out   []verdict.Change
	patch []location.VerdictChange
}

// engine returns an enginePass holding the fixture's reports, decided at now.
func (f passFixture) engine(tb testing.TB, now time.Time) *enginePass {
	p := &enginePass{e: verdict.New(), dns: f.server(tb)}
	p.e.Configure(f.doc)
	for i, name := range f.checkers {
		p.e.Progress(name, f.regions[i], now)
		for _, c := range f.doc.Checks {
			p.e.SetReport(c.ID, name, gossip.Entry{Status: checker.StatusHealthy, Latency: time.Millisecond})
		}
	}
	p.step(now)
	return p
}

// step is what Node.step does after the drain: advance, take the changes, patch DNS.
func (p *enginePass) step(now time.Time) {
	p.e.Advance(now)
	p.out = p.e.Changes(p.out[:0])
	p.patch = p.patch[:0]
	for _, c := range p.out {
		p.patch = append(p.patch, location.VerdictChange{Check: c.Check, Healthy: c.Serving()})
	}
	p.dns.PatchVerdicts(p.patch)
}

// BenchmarkFullPassVsEngine: side by side, at 10k, 30k and 100k checks × 6 reports, the
// location's evaluation before the verdict engine (a full pass every 500 ms, with and
// without its per-check gauges) and the engine. One op is two ticks: one with no change
// (the checkers' heartbeats only) and one in which all six reports of 1% of the checks
// change status (so 1% of the verdicts, and of the DNS record sets, change). The engine's
// side starts after the gossip drain, which is gossip's work and not mirrored here; the full
// pass includes the copy out of the table, which is its own. Metrics: ns per tick of each
// kind (wall), the process's CPU time per tick (the collector included) and the share of one
// core that CPU time takes at a 500 ms tick. The full pass looks every check up in the
// document with CheckByID, a scan of its checks, so it grows with the square of the checks:
// at 100k checks one op takes minutes; run that size with -benchtime 1x.
//
//	go test -run '^$' -bench 'FullPassVsEngine/checks=[13]0000/' -benchmem -benchtime 3x ./agent/
//	go test -run '^$' -bench 'FullPassVsEngine/checks=100000/' -benchmem -benchtime 1x ./agent/
func BenchmarkFullPassVsEngine(b *testing.B) {
	for _, n := range []int{10_000, 30_000, 100_000} {
		f := newPassFixture(n)
		for _, kind := range []string{"fullpass", "fullpass-nogauges", "engine"} {
			b.Run(fmt.Sprintf("checks=%d/%s", n, kind), func(b *testing.B) {
				now := time.Unix(1_700_000_000, 0)
				var tick func(change int)
				var changedOnce func() bool
				switch kind {
				case "engine":
					p := f.engine(b, now)
					tick = func(change int) {
						for i, name := range f.checkers {
							p.e.Progress(name, f.regions[i], now)
						}
						if change >= 0 {
							lo, hi, st := f.flip(change)
							for _, name := range f.checkers {
								for j := lo; j < hi; j++ {
									p.e.SetReport(f.doc.Checks[j].ID, name, gossip.Entry{Status: st, Latency: time.Millisecond})
								}
							}
						}
						p.step(now)
					}
					changedOnce = func() bool { return len(p.out) == max(n/100, 1) }
				default:
					p := f.fullPass(b, kind == "fullpass", now)
					p.evaluate(now)
					tick = func(change int) {
						for _, r := range p.table.rows {
							r.progress = now
						}
						if change >= 0 {
							lo, hi, st := f.flip(change)
							for _, r := range p.table.rows {
								for j := lo; j < hi; j++ {
									c := r.cells[uint32(j)]
									c.status, c.seq = st, c.seq+1
									r.cells[uint32(j)] = c
								}
							}
						}
						p.evaluate(now)
					}
					changedOnce = func() bool { return p.verdicts[f.doc.Checks[0].ID].State == quorum.StateUnhealthy }
				}
				var quiet, changed, cpu time.Duration
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				for b.Loop() {
					now = now.Add(500 * time.Millisecond)
					c0, t0 := cpuTime(), time.Now()
					tick(-1)
					t1 := time.Now()
					now = now.Add(500 * time.Millisecond)
					tick(i)
					if i == 0 && !changedOnce() {
						b.Fatal("the changing tick changed no verdict")
					}
					quiet += t1.Sub(t0)
					changed += time.Since(t1)
					cpu += cpuTime() - c0
					i++
				}
				b.ReportMetric(float64(quiet.Nanoseconds())/float64(i), "ns/tick-quiet")
				b.ReportMetric(float64(changed.Nanoseconds())/float64(i), "ns/tick-1%")
				// CPU time of the process (the collector's included), which the load of a shared
				// machine disturbs less than wall time.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(2*i), "cpu-ns/tick")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(2*i)/5e8*100, "%core@500ms")
			})
		}
	}
}
