package sim

import (
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
	"github.com/vigil-dns/vigil/lab/dev"
	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
)

// chaosTestSeed is the seed of the chaos run in the default suite: its minute has every kind
// of fault (checkers, a location and the leader killed, targets down, cuts both ways and one
// way, loss, latency).
const chaosTestSeed = 10

// The generator is pure: a seed and a duration give one script, which reads back as itself;
// it keeps its limits (one checker per region, one location and one voter down at a time)
// and ends with everything repaired and a wait for every verdict to be healthy.
func TestChaosScript(t *testing.T) {
	regions := dev.DefaultConfig().Regions
	for seed := uint64(1); seed <= 50; seed++ {
		sc, err := Chaos(seed, time.Minute, regions)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Chaos(seed, time.Minute, regions)
		if !slices.EqualFunc(sc.Steps, again.Steps, func(a, b Step) bool { return a.String() == b.String() }) {
			t.Fatalf("seed %d: two scripts", seed)
		}
		var text strings.Builder
		if err := WriteScript(&text, sc); err != nil {
			t.Fatal(err)
		}
		back, err := ParseScript("chaos", strings.NewReader(text.String()), regions)
		if err != nil {
			t.Fatalf("seed %d: the printed script does not parse: %v\n%s", seed, err, text.String())
		}
		if back.Network != NetworkNodes || back.voters() != chaosVoters || len(back.Steps) != len(sc.Steps) {
			t.Fatalf("seed %d: read back %s with %d voters and %d steps, want %d steps", seed, back.Network, back.voters(), len(back.Steps), len(sc.Steps))
		}
		for i := range sc.Steps {
			if sc.Steps[i].String() != back.Steps[i].String() || sc.Steps[i].For != back.Steps[i].For {
				t.Fatalf("seed %d: step %d is %q, read back %q", seed, i, sc.Steps[i], back.Steps[i])
			}
		}
		checkChaosLimits(t, seed, sc)
	}
	a, _ := Chaos(1, time.Minute, regions)
	b, _ := Chaos(2, time.Minute, regions)
	if slices.EqualFunc(a.Steps, b.Steps, func(x, y Step) bool { return x.String() == y.String() }) {
		t.Error("seeds 1 and 2 gave the same script")
	}
	kinds := FaultCounts(mustChaos(t, chaosTestSeed, time.Minute))
	for _, k := range []string{StepKill, StepStart, StepKillLeader, StepDown, StepUp, StepCut, StepCutOneWay, StepLoss, StepLatency, StepHeal} {
		if kinds[k] == 0 {
			t.Errorf("the test's seed %d has no %s step: %v", chaosTestSeed, k, kinds)
		}
	}
	long := mustChaos(t, 1, MaxChaosDuration)
	if held := holds(long); held < MaxChaosDuration {
		t.Errorf("an hour's script holds only %v: cut short at %d steps", held, len(long.Steps))
	}
	for _, d := range []time.Duration{0, -time.Second, 2 * time.Hour} {
		if _, err := Chaos(1, d, regions); err == nil {
			t.Errorf("duration %v: no error", d)
		}
	}
}

func mustChaos(t *testing.T, seed uint64, d time.Duration) Script {
	t.Helper()
	sc, err := Chaos(seed, d, dev.DefaultConfig().Regions)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// checkChaosLimits replays sc's kills and starts and checks the generator's limits, the
// length of the faults (the sum of the holds) and the repairs at the end.
func checkChaosLimits(t *testing.T, seed uint64, sc Script) {
	t.Helper()
	down := map[string]bool{}
	var held time.Duration
	count := func(pred func(string) bool) int {
		n := 0
		for id := range down {
			if pred(id) {
				n++
			}
		}
		return n
	}
	for i, st := range sc.Steps {
		switch st.Kind {
		case StepKill:
			if down[st.Regions[0]] {
				t.Fatalf("seed %d: step %d kills %s, which is down", seed, i, st.Regions[0])
			}
			down[st.Regions[0]] = true
		case StepKillLeader:
			down["voter"] = true
		case StepStart:
			switch st.Regions[0] {
			case "all":
				clear(down)
			case "voters":
				delete(down, "voter")
			default:
				if !down[st.Regions[0]] {
					t.Fatalf("seed %d: step %d starts %s, which runs", seed, i, st.Regions[0])
				}
				delete(down, st.Regions[0])
			}
		case StepHold:
			held += st.For
		}
		if n := count(func(id string) bool { return strings.HasSuffix(id, "-location") }); n > 1 {
			t.Fatalf("seed %d: step %d: %d locations down", seed, i, n)
		}
		for _, r := range dev.DefaultConfig().Regions {
			if n := count(func(id string) bool { return strings.HasPrefix(id, r+"-checker-") }); n > 1 {
				t.Fatalf("seed %d: step %d: %d checkers of %s down", seed, i, n, r)
			}
		}
	}
	if held < time.Minute || held > time.Minute+chaosMaxHold {
		t.Errorf("seed %d: holds add up to %v, want a minute", seed, held)
	}
	n := len(sc.Steps)
	last := slices.IndexFunc(sc.Steps, func(st Step) bool { return st.Kind == StepWait })
	if last != n-1 || n < 4 || sc.Steps[n-3].String() != "start all" && !slices.ContainsFunc(sc.Steps[:n-1], func(st Step) bool { return st.String() == "start all" }) {
		t.Errorf("seed %d: the only wait is not the last step, or no start all: %v", seed, sc.Steps[max(n-6, 0):])
	}
	tail := sc.Steps[slices.IndexFunc(sc.Steps, func(st Step) bool { return st.String() == "start all" })-1 : n-1]
	if tail[0].Kind != StepHeal || slices.ContainsFunc(tail[2:], func(st Step) bool { return st.Kind != StepUp }) {
		t.Errorf("seed %d: the script does not end with heal, start all, up steps and a wait: %v", seed, tail)
	}
}

// Every chaos step is checked when read.
func TestParseChaosSteps(t *testing.T) {
	regions := dev.DefaultConfig().Regions
	good := "network nodes\nkill voter-2\nkill us-east-location\nkill sa-east-checker-3\nstart all\nstart voters\nstart eu-west-checker-1\n" +
		"kill-leader\ncut-oneway us-east sa-east\nloss eu-west sa-east 12.5\nlatency us-east eu-west 150ms\nlatency us-east sa-east 150ms 50ms\n"
	sc, err := ParseScript("good", strings.NewReader(good), regions)
	if err != nil || len(sc.Steps) != 11 || sc.voters() != chaosVoters {
		t.Fatalf("good script: %d steps, %d voters, %v", len(sc.Steps), sc.voters(), err)
	}
	if st := sc.Steps[9]; st.Fault.Delay != 150*time.Millisecond || st.String() != "latency us-east eu-west 150ms" {
		t.Errorf("latency step: %+v", st)
	}
	if st := sc.Steps[10]; st.Fault.Delay != 150*time.Millisecond || st.Fault.Jitter != 50*time.Millisecond || st.String() != "latency us-east sa-east 150ms 50ms" {
		t.Errorf("latency step with jitter: %+v", st)
	}
	for _, bad := range []string{
		"kill", "kill all", "kill eu-central-location", "kill voter-4", "kill voter-01", "kill us-east-checker-4", "kill -location", "kill us-east-checker-x", "start", "start everything",
		"kill-leader now", "cut-oneway us-east", "cut-oneway us-east us-east", "cut-oneway us-east mars",
		"loss us-east eu-west", "loss us-east eu-west 101", "loss us-east eu-west -1", "loss us-east eu-west x",
		"latency us-east eu-west 0s", "latency us-east eu-west 11s", "latency us-east eu-west fast",
		"latency us-east eu-west 50ms 51ms", "latency us-east eu-west 50ms -1ms", "latency us-east eu-west 50ms x", "latency us-east eu-west 50ms 1ms 2ms",
	} {
		if _, err := ParseScript("bad", strings.NewReader(bad), regions); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestChaos is the chaos run of the default suite: a minute of seeded faults on the nodes
// network with three voters, steady DNS queries against every location and control-plane
// writes; the history must hold no violation, no acknowledged write may be lost, and once
// everything is repaired every location must settle on every verdict healthy. The nightly
// run is `make chaos` (10 minutes); VIGIL_CHAOS_SEED and VIGIL_CHAOS_DURATION change this
// one's seed and length.
func TestChaos(t *testing.T) {
	t.Parallel()
	seed, d := uint64(chaosTestSeed), time.Minute
	if s := os.Getenv("VIGIL_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("VIGIL_CHAOS_SEED: %v", err)
		}
	}
	if s := os.Getenv("VIGIL_CHAOS_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("VIGIL_CHAOS_DURATION: %v", err)
		}
	}
	sc := mustChaos(t, seed, d)
	var text strings.Builder
	_ = WriteScript(&text, sc)
	t.Logf("seed %d, %v; the script:\n%s", seed, d, text.String())
	m := calibrate.Start()
	defer m.Stop()
	res := runScript(t, sc)
	load := m.Reading()
	t.Logf("the machine meanwhile: %v", load)
	w := res.Writes
	if w == nil {
		t.Fatal("no control-plane writes were made")
	}
	t.Logf("writes: %+v", *w)
	if !w.OK() || w.Checked == 0 {
		t.Errorf("acknowledged writes: %d of %d checked, %d lost, %d unchecked, read back: %q, %v", w.Checked, w.Acknowledged, w.Lost, w.Unchecked, w.ReadBack, w.Problems)
	}
	// Five writes a second for a minute; leader kills fail some, most are acknowledged. On an
	// idle machine at least a quarter of the five a second are; a write is a raft round and
	// an fsync, which a busy machine slows by the slowdown measured over the run, and the
	// writer sends the next only after one returns, so that floor divides by it.
	floor := int(float64(d/writeInterval) / 4 / min(load.Slowdown, calibrate.MaxSlowdown))
	if w.Acknowledged < w.Attempted/2 || w.Acknowledged < floor {
		t.Errorf("writes: %d attempted, only %d acknowledged (want half, and at least %d at a slowdown of %.1f)", w.Attempted, w.Acknowledged, floor, load.Slowdown)
	}
	if bound := load.Scale(ChaosSettle); res.Recovery > bound {
		t.Errorf("final convergence took %v, more than %v (%v on an idle machine, slowdown %.1f)", res.Recovery, bound, ChaosSettle, load.Slowdown)
	}
	killsLocation := slices.ContainsFunc(sc.Steps, func(st Step) bool {
		return st.Kind == StepKill && strings.HasSuffix(st.Regions[0], "-location")
	})
	if killsLocation && res.Audit.Unanswered == 0 {
		t.Error("no query went unanswered: the killed location was not killed")
	}
}

// holds returns the sum of the script's holds.
func holds(sc Script) time.Duration {
	var d time.Duration
	for _, st := range sc.Steps {
		if st.Kind == StepHold {
			d += st.For
		}
	}
	return d
}

// A query that comes back as it was sent is no answer. Found by `make chaos`: with a location
// down, its port free, the querier's socket got that very port and was connected to itself;
// its own query came back in 50µs and was recorded as an empty NOERROR answer, a violation.
func TestQuerierRefusesItsOwnQuery(t *testing.T) {
	mirror, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mirror.Close()
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := mirror.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = mirror.WriteTo(buf[:n], from)
		}
	}()
	q := &querier{location: "us-east", addr: mirror.LocalAddr().String(), client: &dns.Client{Timeout: time.Second}}
	a := q.ask(t.Context(), "static.demo.vigil.test.")
	if a.Err == "" {
		t.Fatalf("a query sent back was recorded as an answer: %v", a)
	}
	res := answeraudit.New(mustDemo(t), 0).Audit(answeraudit.History{Answers: []answeraudit.Answer{a}})
	if len(res.Violations) != 0 || res.Unanswered != 1 {
		t.Errorf("verification: %+v", res)
	}
}

func mustDemo(t *testing.T) *config.Document {
	t.Helper()
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
