package sim

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
	"github.com/vigil-dns/vigil/lab/dev"
	"github.com/vigil-dns/vigil/lab/oracle"
)

// TestPoison is the shuffle-sharding story: one endpoint hangs every connection, another
// floods every response. Their checks must turn unhealthy everywhere within their detection
// bound, no other verdict may change, no answer may break the history (nor the independent
// oracle's judgement), and every ordinary check must stay on schedule wherever a worker pool
// absorbs the hostile probes; the checkers with a single worker show what a stalled worker
// costs, and only those that hold a hang check pay it. Every timing bound adds what the same
// run measured of the machine: the controls' lag, the harness's stalls, the timers'
// lateness. Only when the machine's own lag is as long as a hang's delay does the run skip,
// and then only that comparison, and says so.
func TestPoison(t *testing.T) {
	if testing.Short() {
		t.Skip("a 27-node network for about 30s")
	}
	t.Parallel()
	sc, err := Scenario("poison", dev.DefaultConfig().Regions)
	if err != nil {
		t.Fatal(err)
	}
	// A probe should start well within its interval: a stalled worker delays the probes
	// behind it by up to the hostile check's timeout (500ms), so half of it is the bound,
	// on top of the lag the machine itself caused in the same run. Two measurements are
	// controls, which no hostile check touches: the checkers of the default pool before the
	// poison, and while it lasts those that hold no hostile check (missing when checks moved
	// while the poison lasted: then the first alone). Their lag p99 is the machine's, and
	// every schedule bound adds it. (Not the single workers before the poison: each probes
	// its checks one after another, which a busy machine lengthens past the interval with
	// no hostile check at all; their own baseline is added to their bounds below.)
	m := calibrate.Start()
	defer m.Stop()
	defer func() { t.Logf("the machine meanwhile: %v", m.Reading()) }()
	res := runPoison(t, sc)
	lagBound := hostileTimeout(t, res.Poison) / 2
	b := res.Poison.Baseline
	if j := slices.IndexFunc(res.Poison.BaselineByPool, func(g ScheduleFigures) bool { return g.Pool == checker.DefaultConcurrency }); j >= 0 {
		b = res.Poison.BaselineByPool[j]
	}
	if b.Probes == 0 {
		t.Fatalf("no control: no probe before the poison")
	}
	controlLag := b.LagP99
	if i := slices.IndexFunc(res.Poison.Groups, func(g ScheduleFigures) bool {
		return g.Pool == checker.DefaultConcurrency && g.Hangs == 0 && g.Floods == 0
	}); i >= 0 {
		controlLag = max(controlLag, res.Poison.Groups[i].LagP99)
	}

	// Correctness that holds however late the processes run: every answer allowed by a
	// verdict in force, the pool answered as it should be, every probe result kept, the
	// hostile checks failed everywhere for their reasons.
	if n := len(res.Audit.Violations); n > 0 {
		t.Errorf("%d history violations, first: %v", n, res.Audit.Violations[0])
	}
	if res.Audit.Answers < 100 || res.Detection <= 0 || res.Recovery <= 0 {
		t.Errorf("%d answers, detection %v, recovery %v: want answers, and both measured", res.Audit.Answers, res.Detection, res.Recovery)
	}
	// DNS served the pool's hostile endpoints before the poison, and only the ordinary ones
	// while it lasted.
	const pool = "pool.demo.vigil.test."
	ordinary := []string{"192.0.2.10", "192.0.2.11", "192.0.2.12"}
	every := append(slices.Clone(ordinary), "198.51.100.20", "198.51.100.21", "198.51.100.22", "198.51.100.23")
	for _, l := range res.Regions {
		if !answered(res, l, pool, every...) || !answered(res, l, pool, ordinary...) {
			t.Errorf("%s: pool was not answered with every endpoint, then with the ordinary ones only", l)
		}
	}
	f := res.Poison
	if f.Dropped > 0 {
		t.Errorf("%d probe results not kept", f.Dropped)
	}
	// The classes exist: the pool of 64 holding a hang, a single worker holding none.
	var absorbed, spared bool
	for _, c := range f.Classes {
		absorbed = absorbed || (c.Pool == checker.DefaultConcurrency && c.Hangs > 0)
		spared = spared || (c.Pool == smallPool && c.Hangs == 0)
		if c.Probes == 0 {
			t.Errorf("pool %d, holding a hang check: %v: no ordinary probe", c.Pool, c.Hangs > 0)
		}
	}
	if !absorbed || !spared {
		t.Errorf("no checker of the default pool held a hang check (%v), or none with one worker held none (%v)", absorbed, spared)
	}
	// Every checker that probed a hostile check failed it (the reasons below). That every
	// location turned it unhealthy needs their reports fresh there: a harness that ran
	// nothing for the freshness window or longer (its longest stall, measured in the same
	// run) let them go stale everywhere at once, and then it is logged, not judged.
	longestStall := time.Duration(0)
	for _, st := range res.Stalls {
		longestStall = max(longestStall, st.To.Sub(st.From))
	}
	fresh := config.DefaultDocument().Quorum.FreshnessWindow.Std()
	for _, h := range f.Hostile {
		if h.Probes == 0 || !h.Detected && longestStall < fresh {
			t.Errorf("%s: %d probes, unhealthy everywhere: %v (longest stall %v, freshness window %v)", h.Check, h.Probes, h.Detected, longestStall, fresh)
		} else if !h.Detected {
			t.Logf("%s: %d probes, not unhealthy everywhere; not judged: the harness stalled %v, the freshness window %v or more", h.Check, h.Probes, longestStall, fresh)
		}
		// A hang ends by its timeout; a flood ends at the probe's cap (or, on a loaded
		// machine, at its timeout); none passes.
		if h.Kind == hostileHang && h.Reasons != fmt.Sprintf("timeout %d", h.Probes) {
			t.Errorf("%s: reasons %q, want timeout only", h.Check, h.Reasons)
		}
		want := map[string]string{"flood-headers": "protocol", "flood-body": "body_mismatch"}[h.Check]
		if h.Kind == hostileFlood && (!strings.Contains(h.Reasons, want+" ") || strings.Contains(h.Reasons, "ok ")) {
			t.Errorf("%s: reasons %q, want %s and no ok", h.Check, h.Reasons, want)
		}
	}

	// No healthy endpoint flipped and the independent oracle found nothing, but what a
	// stall of the harness as long as a probe's timeout explains (excused, and counted in
	// the report): a stalled process fails probes of healthy targets for real.
	checkFlips(t, res)
	checkOracle(t, res)
	// By class: the pool of 64 absorbs the hangs; a single worker that holds one waits
	// behind it, which shows that the lag is measured. A single worker that holds a flood
	// check waits behind the flood's probe, which ends at the head or body cap: at once on an
	// idle machine, but on a loaded one after as long as reading 64 KiB takes (a quarter of a
	// second on two busy cores), so its bound adds the longest flood probe measured in the same run. A single
	// worker that holds no hostile check has nothing to wait on.
	var floodLongest time.Duration
	for _, h := range f.Hostile {
		if h.Kind == hostileFlood {
			floodLongest = max(floodLongest, h.Longest)
		}
	}
	// Every judged group's bound adds the controls' lag p99 (at most lagBound, or the run
	// was judged loaded above): the lag the machine itself caused in this run, which no
	// hostile check did.
	t.Logf("lag bound %v, plus the controls' lag p99 %v", lagBound, controlLag)
	// Each pool's own probes before the poison are its baseline: a single worker probes its
	// checks one after another, which a busy machine lengthens past the interval with no
	// hostile check (its lag and missed gaps), and a starved machine fails probes of healthy
	// targets (timeouts). What the poison may not do is make either worse: a pool's lag adds
	// its baseline's lag p99, its missed gaps and failed probes may reach twice its
	// baseline's share. On an idle machine the baselines are about 0, the bounds as before.
	base := map[int]ScheduleFigures{}
	for _, b := range f.BaselineByPool {
		base[b.Pool] = b
	}
	concurrent := func(pool int) ScheduleFigures { // the pool's checkers without a hostile check while poisoned
		if i := slices.IndexFunc(f.Groups, func(g ScheduleFigures) bool { return g.Pool == pool && g.Hangs == 0 && g.Floods == 0 }); i >= 0 {
			return f.Groups[i]
		}
		return ScheduleFigures{}
	}
	share := func(of, b, bOf int) int { // twice b/bOf of `of`, rounded up
		if bOf == 0 {
			return 0
		}
		return (2*b*of + bOf - 1) / bOf
	}
	// The single workers that held a hang check show that the lag is measured: they lag
	// the bound more than the machine's own lag for their pool (the controls', or their
	// baseline's). When that lag is itself as long as the bound, a hang's delay cannot be
	// told from the machine's in this run, nor a single worker's schedule judged against
	// it: those alone are not judged, and the test says so.
	var hangLag time.Duration
	for _, c := range f.Classes {
		if c.Pool == smallPool && c.Hangs > 0 {
			hangLag = c.LagP99
		}
	}
	noise := max(controlLag, base[smallPool].LagP99)
	unmeasured := ""
	if hangLag < lagBound+noise {
		if noise < lagBound {
			t.Errorf("the single-worker checkers that held a hang check lagged %v, less than %v and the machine's %v: the lag is not measured", hangLag, lagBound, noise)
		} else {
			unmeasured = fmt.Sprintf("the single-worker checkers that held a hang check lagged %v (p99), and the machine itself %v (the controls' or their pool's baseline lag p99, at least the %v bound): a hang's delay cannot be told from the machine's in this run, nor a single worker's schedule judged", hangLag, noise, lagBound)
		}
	}
	for _, c := range f.Classes {
		name := fmt.Sprintf("pool %d, holding a hang check: %v", c.Pool, c.Hangs > 0)
		if c.Pool == smallPool && (c.Hangs > 0 || unmeasured != "") {
			continue
		}
		// The single workers without a hang check are judged by group below, since holding
		// a flood changes their bound.
		if c.Pool != smallPool && c.LagP99 > lagBound+controlLag {
			t.Errorf("%s: %d probes, lag p99 %v, want under %v", name, c.Probes, c.LagP99, lagBound+controlLag)
		}
		// The machine's load moves: the same pool's checkers that held no hostile check
		// while the poison lasted are a control of that time, and the larger share of the
		// two is the machine's.
		pb, cg := base[c.Pool], concurrent(c.Pool)
		if allowed := max(share(c.Probes, pb.Failed, pb.Probes), share(c.Probes, cg.Failed, cg.Probes)); c.Failed > allowed {
			t.Errorf("%s: %d of %d ordinary probes failed, want at most %d (%d of %d before the poison, %d of %d meanwhile without a hostile check)", name, c.Failed, c.Probes, allowed, pb.Failed, pb.Probes, cg.Failed, cg.Probes)
		}
		if allowed := c.Gaps/100 + max(share(c.Gaps, pb.Missed, pb.Gaps), share(c.Gaps, cg.Missed, cg.Gaps)); c.Missed > allowed {
			t.Errorf("%s: %d of %d gaps over 1.5 intervals, want at most 1%% and twice the share before the poison (%d of %d) or meanwhile without a hostile check (%d of %d)", name, c.Missed, c.Gaps, pb.Missed, pb.Gaps, cg.Missed, cg.Gaps)
		}
	}
	for _, g := range f.Groups {
		if g.Pool != smallPool || g.Hangs > 0 || unmeasured != "" {
			continue
		}
		bound := lagBound + max(controlLag, base[g.Pool].LagP99, concurrent(g.Pool).LagP99)
		if g.Floods > 0 {
			bound += floodLongest
		}
		if g.LagP99 > bound {
			t.Errorf("pool %d, holding %d flood checks: %d probes, lag p99 %v, want under %v", g.Pool, g.Floods, g.Probes, g.LagP99, bound)
		}
	}
	// The detection bound is the checks' (failure threshold + 1 intervals, a timeout, a
	// second); a stall of the harness delays every probe by its length, so the bound adds the
	// stalls measured in the run (or the lateness, below). No probe outlives its timeout by
	// more than another timeout and the longest spell of stalls it can span.
	stalledAll := stalledBetween(res.Stalls, time.Time{}, time.Now())
	// Short of stalls, a busy machine runs every timer of the process late by a share of the
	// time (the meter's ticks: calibrate.Reading.Late over its Wall); the probes and
	// reports of a detection too, so the bound adds that share of it, or the stalls if more.
	load := m.Reading()
	lateShare := float64(load.Late) / float64(max(load.Wall, time.Nanosecond))
	for _, h := range f.Hostile {
		extra := max(stalledAll, time.Duration(float64(h.Bound)*lateShare))
		if bound := h.Bound + extra; h.Detection > bound {
			t.Errorf("%s: unhealthy everywhere after %v; want within %v (%v, and %v of stalls or lateness: %v)", h.Check, h.Detection, bound, h.Bound, extra, load)
		}
		// One probe spans every stall that follows another by less than its timeout.
		if spell := stallSpell(res.Stalls, h.Timeout); h.Longest > 2*h.Timeout+spell {
			t.Errorf("%s: longest probe %v, timeout %v, longest spell of stalls less than a timeout apart %v", h.Check, h.Longest, h.Timeout, spell)
		}
	}
	skipIfStarved(t, res)
	if unmeasured != "" {
		t.Skipf("not judged: %s; every other assertion was, the default pool's schedule against bounds that add the machine's lag", unmeasured)
	}
}

// runPoison runs sc on the demo configuration, logs its timeline and report, and fails the
// test if the run could not be made or measured nothing.
func runPoison(t *testing.T, sc Script) Result {
	t.Helper()
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var timeline, report strings.Builder
	res, err := Run(t.Context(), Options{
		Script: sc, Document: doc, DataDir: t.TempDir(), Timeline: &timeline,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError})),
	})
	_ = res.WriteReport(&report)
	t.Logf("timeline:\n%s%s", timeline.String(), report.String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Poison == nil {
		t.Fatal("the poison network measured nothing")
	}
	return res
}

// hostileTimeout returns the hostile checks' timeout.
func hostileTimeout(t *testing.T, f *PoisonFigures) (d time.Duration) {
	t.Helper()
	if len(f.Hostile) == 0 || f.Hostile[0].Timeout <= 0 {
		t.Fatal("no hostile check measured")
	}
	return f.Hostile[0].Timeout
}

// stalledBetween returns how long the stalls lasted between from and to.
func stalledBetween(stalls []oracle.Stall, from, to time.Time) time.Duration {
	var d time.Duration
	for _, st := range stalls {
		a, b := later(st.From, from), st.To
		if to.Before(b) {
			b = to
		}
		if b.After(a) {
			d += b.Sub(a)
		}
	}
	return d
}

// stallSpell returns the longest spell of stalls (in order) each of which begins less than gap
// after the one before it ends, from the first's start to the last's end.
func stallSpell(stalls []oracle.Stall, gap time.Duration) time.Duration {
	var longest time.Duration
	var from, to time.Time
	for _, st := range stalls {
		if from.IsZero() || st.From.Sub(to) >= gap {
			from = st.From
		}
		to = later(to, st.To)
		longest = max(longest, to.Sub(from))
	}
	return longest
}
