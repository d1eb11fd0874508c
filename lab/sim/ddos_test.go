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
// same servers, the same flood takes every zone's answers down with the victim's (at most
// 85% answered). The bounds are generous: the flood runs in this process, on the test
// machine's cores. A budget shared by the listeners, say, leaves about 10% answered.
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
	if res.Unsharded == nil {
		t.Fatal("no unsharded run")
	}
	for _, p := range res.Problems(DDoSBounds{MinAnswered: 0.95, MaxP99: time.Second, MaxUnshardedAnswered: 0.85}) {
		t.Error(p)
	}
}

// The checks of a result find what does not hold: a flood that reached the unshared servers,
// and one that never reached anybody.
func TestDDoSProblems(t *testing.T) {
	cfg := DDoSConfig{FloodRate: 100, Flood: time.Second, Budget: 10, ProbeInterval: 100 * time.Millisecond,
		ProbeTimeout: time.Second, TryTimeout: 250 * time.Millisecond, ShardSize: 4}
	group := func(overlap int, victim, shared bool, phase string, sent, answered int, p99 time.Duration) DDoSGroup {
		return DDoSGroup{Overlap: overlap, Victim: victim, Shared: shared, Phase: phase, Zones: 1, Servers: 1,
			Sent: sent, Answered: answered, P99: p99}
	}
	good := func() *DDoSRun {
		return &DDoSRun{VictimServers: []int{1, 2, 3, 4}, FloodSent: 400, FloodTook: time.Second, BudgetDrops: 300, VictimAnswered: 50,
			Groups: []DDoSGroup{
				group(1, false, false, PhaseBefore, 10, 10, time.Millisecond),
				group(1, false, false, PhaseFlood, 10, 10, time.Millisecond),
				group(1, false, true, PhaseFlood, 10, 4, time.Millisecond),
				group(2, false, false, PhaseFlood, 10, 10, time.Millisecond),
				group(4, true, true, PhaseFlood, 10, 3, time.Millisecond),
			}}
	}
	bounds := DDoSBounds{MinAnswered: 0.99, MaxP99: 50 * time.Millisecond, MaxUnshardedAnswered: 0.85}
	if p := (DDoSResult{Config: cfg, Sharded: good()}).Problems(bounds); len(p) > 0 {
		t.Errorf("a good run has problems: %q", p)
	}
	slow := good()
	slow.Groups[3] = group(2, false, false, PhaseFlood, 10, 9, 80*time.Millisecond)
	if p := (DDoSResult{Config: cfg, Sharded: slow}).Problems(bounds); len(p) != 1 || !strings.Contains(p[0], "shares 2, unshared servers answered 90.0%") {
		t.Errorf("a zone that lost answers on its unshared servers: %q", p)
	}
	lost := good()
	lost.Groups = append(lost.Groups, DDoSGroup{Overlap: 2, Resolver: true, Phase: PhaseFlood, Zones: 1, Servers: 1, Sent: 10, Answered: 10,
		P99: 2*cfg.TryTimeout + 60*time.Millisecond})
	if p := (DDoSResult{Config: cfg, Sharded: lost}).Problems(bounds); len(p) != 1 || !strings.Contains(p[0], "shares 2, resolver resolved 100.0%") {
		t.Errorf("a zone whose resolutions took longer than a try of each shared server: %q", p)
	}
	over := good()
	over.Groups = append(over.Groups, group(3, false, false, PhaseBefore, 10, 10, time.Millisecond))
	if p := (DDoSResult{Config: cfg, Sharded: over}).Problems(bounds); len(p) != 1 || !strings.Contains(p[0], "over the allocator's limit") {
		t.Errorf("a zone sharing 3 servers with the victim: %q", p)
	}
	idle := good()
	idle.FloodSent, idle.BudgetDrops = 10, 0
	if p := (DDoSResult{Config: cfg, Sharded: idle}).Problems(bounds); len(p) != 2 {
		t.Errorf("a flood that was not sent: %q", p)
	}
	un := good()
	un.Groups = []DDoSGroup{group(4, false, true, PhaseFlood, 200, 190, time.Millisecond), group(4, true, true, PhaseFlood, 10, 1, time.Millisecond)}
	if p := (DDoSResult{Config: cfg, Sharded: good(), Unsharded: un}).Problems(bounds); len(p) != 2 || !strings.Contains(p[1], "did not reach them") {
		t.Errorf("an unsharded run where the flood did not reach the other zones: %q", p)
	}
}
