package sim

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestDDoS floods one zone's four name servers at five times their budget, on a real agent
// runtime, and checks that every zone sharing at most two of them keeps answering on its
// other servers (at least 95% within 2s, p99 within 1s; on an idle machine 100%, p99 well
// under a millisecond), while the victim's servers shed; then that, with every zone on the
// same servers, the same flood takes every zone's answers down with the victim's. The bounds
// are generous: the flood runs in this process, on the test machine's cores (a shared budget,
// say, leaves about 10% answered).
func TestDDoS(t *testing.T) {
	// Not parallel: the flood would take CPU time from the package's timed scenarios.
	var timeline strings.Builder
	res, err := RunDDoS(t.Context(), DDoSConfig{
		Zones: 24, Fleet: 16, ShardSize: 4, Budget: 1000, FloodRate: 5000, Flood: 3 * time.Second,
		Before: time.Second, ProbeTimeout: 2 * time.Second, Unsharded: true, DataDir: t.TempDir(), Timeline: &timeline,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError})),
	})
	var report strings.Builder
	_ = res.WriteReport(&report)
	t.Logf("timeline:\n%s%s", timeline.String(), report.String())
	if err != nil {
		t.Fatal(err)
	}
	cfg := res.Config

	checkShed := func(run *DDoSRun) {
		t.Helper()
		servers := float64(len(run.VictimServers))
		if run.FloodSent < int64(float64(cfg.FloodRate)*servers*cfg.Flood.Seconds()/2) {
			t.Errorf("%s: the flood sent only %d queries", run.Layout, run.FloodSent)
		}
		// The budgets drop queries, and hold: the victim's servers answer at most their
		// budget a second (plus a burst of a tenth of a second), probes included, and so less
		// than half the flood. (On a busy machine the kernel drops some of the flood too, when
		// the location waits for a core and its sockets' buffers fill.)
		if run.BudgetDrops == 0 || run.VictimAnswered > float64(run.FloodSent)/2 {
			t.Errorf("%s: %v of %d flood queries dropped by the budgets, %v of the victim's queries answered",
				run.Layout, run.BudgetDrops, run.FloodSent, run.VictimAnswered)
		}
		if most := servers * float64(cfg.Budget) * (run.FloodTook.Seconds() + cfg.ProbeTimeout.Seconds() + 0.1) * 1.1; run.VictimAnswered > most {
			t.Errorf("%s: the victim's servers answered %v queries, over their budgets' %v", run.Layout, run.VictimAnswered, most)
		}
	}

	// Sharded: the unshared servers of every zone answer everything, within a generous bound;
	// the victim's servers shed.
	run := res.Sharded
	checkShed(run)
	overlaps := map[int]bool{}
	for i := range run.Groups {
		g := &run.Groups[i]
		if g.Phase == PhaseBefore && g.AnsweredShare() < 0.99 {
			t.Errorf("sharded, before the flood: %s answered %.1f%% of %d", g.Name(), 100*g.AnsweredShare(), g.Sent)
		}
		if g.Phase != PhaseFlood || g.Victim || g.Shared {
			continue
		}
		overlaps[g.Overlap] = true
		if g.Sent < 10*g.Servers {
			t.Errorf("sharded, flood: %s: only %d probes over %d servers", g.Name(), g.Sent, g.Servers)
		}
		if g.AnsweredShare() < 0.95 || g.P99 > time.Second {
			t.Errorf("sharded, flood: %s answered %.1f%% of %d, p99 %v: want at least 95%% within 2s, p99 within 1s",
				g.Name(), 100*g.AnsweredShare(), g.Sent, g.P99)
		}
	}
	if !overlaps[1] || !overlaps[2] {
		t.Errorf("no zone shares 1 or 2 servers with the victim (groups %v): the test shows nothing", overlaps)
	}
	shed, shedSent := 0, 0
	for i := range run.Groups {
		if g := &run.Groups[i]; g.Phase == PhaseFlood && g.Shared {
			shed += g.Sent - g.Answered
			shedSent += g.Sent
		}
	}
	if shedSent == 0 || float64(shed) < 0.15*float64(shedSent) {
		t.Errorf("sharded, flood: the victim's servers answered %d of %d probes: they did not shed", shedSent-shed, shedSent)
	}

	// Unsharded: the other zones, on the victim's servers, lose answers with it.
	un := res.Unsharded
	if un == nil {
		t.Fatal("no unsharded run")
	}
	checkShed(un)
	g := un.Group(false, cfg.ShardSize, true, PhaseFlood)
	if g == nil || g.Sent < 100 {
		t.Fatalf("unsharded: no probes of the other zones during the flood: %+v", g)
	}
	if g.AnsweredShare() > 0.85 {
		t.Errorf("unsharded, flood: the other zones answered %.1f%% of %d: the flood did not reach them", 100*g.AnsweredShare(), g.Sent)
	}
}
