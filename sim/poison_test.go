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
	"github.com/vigil-dns/vigil/dev"
)

// TestPoison is the shuffle-sharding story: one endpoint hangs every connection, another
// floods every response. Their checks must turn unhealthy everywhere within their detection
// bound, no other verdict may change, no answer may break the history (nor the independent
// oracle's judgement), and every ordinary check must stay on schedule wherever a worker pool
// absorbs the hostile probes; the checkers with a single worker show what a stalled worker
// costs, and only those that hold a hang check pay it. On a machine too loaded to judge
// schedules, only the schedule's figures and the times go unjudged.
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
	// behind it by up to the hostile check's timeout (500ms), so half of it is the bound.
	// Two measurements are controls, which no hostile check touches: every checker before
	// the poison, and while it lasts the checkers of the default pool that hold no hostile
	// check. When a control lags too, the machine itself stalled the network (other
	// processes took the CPU) and the run says nothing about the schedule: once more, then
	// the schedule's figures are not judged. Everything else is, whatever the load.
	var res Result
	var lagBound time.Duration
	loaded := ""
	for attempt := 1; ; attempt++ {
		res = runPoison(t, sc)
		lagBound = hostileTimeout(t, res.Poison) / 2
		b := res.Poison.Baseline
		i := slices.IndexFunc(res.Poison.Groups, func(g ScheduleFigures) bool {
			return g.Pool == checker.DefaultConcurrency && g.Hangs == 0 && g.Floods == 0
		})
		if b.Probes == 0 {
			t.Fatalf("no control: no probe before the poison")
		}
		// The second control can be missing: when checks move while the poison lasts (a
		// checker's membership flapped on a busy machine), every checker of the default pool
		// may have probed a hostile check at some point of it.
		why := ""
		if i < 0 {
			why = fmt.Sprintf("no checker of the default pool held no hostile check while poisoned (p99 %v before the poison; bound %v)", b.LagP99, lagBound)
		} else if control := res.Poison.Groups[i]; b.LagP99 > lagBound || control.LagP99 > lagBound {
			why = fmt.Sprintf("a control lagged (p99 %v before the poison, %v without a hostile check; bound %v)", b.LagP99, control.LagP99, lagBound)
		}
		if why == "" {
			break
		}
		if attempt == 2 {
			loaded = "twice " + why + ": the schedules cannot be judged against a control"
			break
		}
		t.Logf("%s: once more", why)
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
	for _, h := range f.Hostile {
		if h.Probes == 0 || !h.Detected {
			t.Errorf("%s: %d probes, unhealthy everywhere: %v", h.Check, h.Probes, h.Detected)
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

	// What needs the processes to run on time: no healthy endpoint flipped and the
	// independent oracle's judgement (its windows assume probes and reports on schedule: a
	// stalled machine fails probes of healthy targets for real), the schedule's figures and
	// the times.
	if loaded != "" {
		t.Skipf("%s; not judged: %d healthy flips, the oracle (%s), the schedule and the times; every other assertion was",
			loaded, len(res.Flips), oracleSummary(res))
	}
	if len(res.Flips) > 0 {
		t.Errorf("healthy endpoints flipped: %v", res.Flips)
	}
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
	var stalled bool
	for _, c := range f.Classes {
		name := fmt.Sprintf("pool %d, holding a hang check: %v", c.Pool, c.Hangs > 0)
		if c.Pool == smallPool && c.Hangs > 0 {
			stalled = c.LagP99 >= lagBound
			continue
		}
		// The single workers without a hang check are judged by group below, since holding
		// a flood changes their bound.
		if c.Pool != smallPool && c.LagP99 > lagBound {
			t.Errorf("%s: %d probes, lag p99 %v, want under %v", name, c.Probes, c.LagP99, lagBound)
		}
		if c.Failed > 0 {
			t.Errorf("%s: %d of %d ordinary probes failed", name, c.Failed, c.Probes)
		}
		if c.Missed*100 > c.Gaps {
			t.Errorf("%s: %d of %d gaps over 1.5 intervals, want at most 1%%", name, c.Missed, c.Gaps)
		}
	}
	for _, g := range f.Groups {
		if g.Pool != smallPool || g.Hangs > 0 {
			continue
		}
		bound := lagBound
		if g.Floods > 0 {
			bound += floodLongest
		}
		if g.LagP99 > bound {
			t.Errorf("pool %d, holding %d flood checks: %d probes, lag p99 %v, want under %v", g.Pool, g.Floods, g.Probes, g.LagP99, bound)
		}
	}
	if !stalled {
		t.Errorf("the single-worker checkers that held a hang check lagged less than %v: the lag is not measured", lagBound)
	}
	for _, h := range f.Hostile {
		if h.Detection > h.Bound {
			t.Errorf("%s: unhealthy everywhere after %v; want within %v", h.Check, h.Detection, h.Bound)
		}
		// No probe outlives its timeout by more than scheduling slack (generous: the machine
		// may be loaded).
		if h.Longest > 2*h.Timeout {
			t.Errorf("%s: longest probe %v, timeout %v", h.Check, h.Longest, h.Timeout)
		}
	}
}

// runPoison runs sc on the demo configuration, logs its timeline and report, and fails the
// test if the run could not be made or measured nothing.
func runPoison(t *testing.T, sc Script) Result {
	t.Helper()
	doc, err := config.Load("../examples/demo.yaml")
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
