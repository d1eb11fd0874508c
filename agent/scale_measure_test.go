package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/quorum"
)

// The location's scale target, measured on a real location: a node with the location role
// only (gossip over loopback, the verdict engine, the DNS server and its verdict store, a
// static configuration of CHECKS http checks each deciding a multivalue record set), fed by
// six checkers (two in each of three regions) that run as real gossip nodes in a child
// process (this test binary again), so that the process measured holds the location alone.
// Every checker reports every check, so the location holds CHECKS × 6 reports, and receives
// them the way a location does: memberlist, row repair, deltas, the table's change feed.
//
// It prints: the time until every check is decided healthy; resident memory (VmRSS and
// VmHWM from /proc/self/status) and the Go heap; the process's CPU time (getrusage) over a
// window with no change; the latency from the arrival of the report that changes a verdict
// (seen in the gossip table) to the DNS server serving the new verdict, over flips of checks
// chosen across the range; and the CPU time over a window in which 1% of the checks change
// per minute (all six reports of each, so each verdict flips).
//
//	VIGIL_MEASURE=1 go test -run '^TestMeasureLocationScale$' -v -timeout 60m ./agent/
//
// VIGIL_MEASURE_CHECKS (default 1,000,000), VIGIL_MEASURE_WINDOW (default 60s) and
// VIGIL_MEASURE_FLIPS (default 100) change the sizes; VIGIL_MEASURE_PROFILE=DIR writes a CPU
// profile of each window there, and a heap profile of what the location holds (and one at
// each new peak of resident memory, sampled every second: scale_sample_test.go). GOMEMLIMIT
// applies to the location only (the agent's -memory-limit), not to the checkers' child.
func TestMeasureLocationScale(t *testing.T) {
	if os.Getenv("VIGIL_MEASURE") == "" {
		t.Skip("set VIGIL_MEASURE=1 to measure")
	}
	checks := envInt("VIGIL_MEASURE_CHECKS", 1_000_000)
	flips := envInt("VIGIL_MEASURE_FLIPS", 100)
	window := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("VIGIL_MEASURE_WINDOW")); err == nil {
		window = d
	}
	profiles := os.Getenv("VIGIL_MEASURE_PROFILE")
	logf := func(format string, args ...any) {
		fmt.Printf("measure: "+format+"\n", args...)
	}
	logf("%d checks × 6 reports; memory limit %s; load %s", checks, memLimit(), loadavg())

	rss := sampleRSS(profiles, logf)
	t.Cleanup(rss.Stop)
	doc := config.Scale{Checks: checks, Protocol: config.ProtocolHTTP}.Document()
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "loc", "us-east", RoleLocation, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys = "127.0.0.1:0", [][]byte{testKey}
	cfg.DNSAddr, cfg.HTTPAddr, cfg.Static = "127.0.0.1:0", "off", doc
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Registerer = newReg()
	n := mustNew(t, cfg)
	start(t, n)
	doc = nil // the node holds the configuration; drop the test's reference
	cpu0 := cpuTime()

	// The checkers, in a child process.
	child := exec.Command(os.Args[0], "-test.run", "^TestMeasureLocationScaleCheckers$", "-test.timeout", "0")
	// A memory limit (GOMEMLIMIT, as `vigil agent -memory-limit` sets it) is the location's:
	// the child holds six checkers and every row six times over.
	env := slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "GOMEMLIMIT=") })
	child.Env = append(env, "VIGIL_MEASURE_SEED="+n.GossipAddr(), "VIGIL_MEASURE_CHECKS="+strconv.Itoa(checks))
	child.Stderr = os.Stderr
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// The child is killed, not asked to stop: at a million checks its gossip nodes have been
	// seen to hold their locks for minutes (push/pull of whole rows), and a stop would wait.
	t.Cleanup(func() { in.Close(); _ = child.Process.Kill(); _ = child.Wait() })
	out := bufio.NewScanner(outPipe)
	expect := func(what string) {
		for out.Scan() {
			if strings.HasPrefix(out.Text(), what) {
				return
			}
		}
		t.Fatalf("checkers: no %q: %v", what, out.Err())
	}
	send := func(cmd string) {
		if _, err := io.WriteString(in, cmd+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	began := time.Now()
	expect("published")
	logf("checkers published their reports %.1fs after the location started", time.Since(began).Seconds())
	for {
		n.loc.mu.Lock()
		counts := n.loc.engine.Counts()
		n.loc.mu.Unlock()
		if counts[quorum.StateHealthy] == checks {
			break
		}
		if time.Since(began) > 30*time.Minute {
			t.Fatalf("after %v: verdicts %v of %d checks", time.Since(began), counts, checks)
		}
		time.Sleep(100 * time.Millisecond)
	}
	loaded := time.Since(began)
	logf("every check decided healthy %.1fs after the location started; CPU so far %.1fs",
		loaded.Seconds(), (cpuTime() - cpu0).Seconds())

	// Settle: the rows' transfers end, the collector returns what they took. Then wait (at
	// most 10 minutes) until all six checkers have been fresh, holding all of their reports,
	// for 10 s: a window with no change measures the steady state, not rows still repaired
	// after the first load (which re-decide every check of a checker each time it goes stale
	// and fresh again).
	time.Sleep(min(window, 30*time.Second))
	settle := time.Now()
	var steady time.Time
	for settled := false; !settled; time.Sleep(100 * time.Millisecond) {
		if time.Since(settle) > 10*time.Minute {
			logf("the six checkers were not all fresh with every report for 10s within 10 minutes; measuring anyway")
			break
		}
		fresh := 0
		n.loc.mu.Lock()
		n.loc.engine.Checkers(func(c quorum.HeardChecker) {
			if c.Fresh && c.Reports == checks {
				fresh++
			}
		})
		n.loc.mu.Unlock()
		switch {
		case fresh < 6:
			steady = time.Time{}
		case steady.IsZero():
			steady = time.Now()
		case time.Since(steady) >= 10*time.Second:
			logf("all six checkers fresh with every report for 10s, %.1fs after settling began", time.Since(settle).Seconds())
			settled = true
		}
	}
	memory := func(when string) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss, hwm := procStatus("VmRSS"), procStatus("VmHWM")
		logf("%s: resident %.0f MiB (peak %.0f MiB); Go heap in use %.0f MiB, live after GC %.0f MiB, from the OS %.0f MiB; %d goroutines",
			when, mib(rss), mib(hwm), mib(ms.HeapInuse), mib(liveAfterGC()), mib(ms.Sys), runtime.NumGoroutine())
	}
	memory("held")
	rss.report()
	if profiles != "" {
		f, err := os.Create(filepath.Join(profiles, "location-heap.pprof"))
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}

	measure := func(name string) {
		var stop func()
		if profiles != "" {
			f, err := os.Create(filepath.Join(profiles, "location-"+name+".pprof"))
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				t.Fatal(err)
			}
			stop = func() { pprof.StopCPUProfile(); f.Close() }
		}
		n.loc.mu.Lock()
		st0 := n.loc.engine.Stats()
		n.loc.mu.Unlock()
		c0, w0, l0 := cpuTime(), time.Now(), loadavg()
		// Count the checkers' changes of freshness: each re-decides all the checks it reports.
		stale := map[string]int{}
		for end := w0.Add(window); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			n.loc.mu.Lock()
			n.loc.engine.Checkers(func(c quorum.HeardChecker) {
				if !c.Fresh {
					stale[c.ID]++
				}
			})
			n.loc.mu.Unlock()
		}
		c, w := cpuTime()-c0, time.Since(w0)
		n.loc.mu.Lock()
		st := n.loc.engine.Stats()
		n.loc.mu.Unlock()
		if stop != nil {
			stop()
		}
		logf("%s: CPU %.2fs over %.0fs = %.1f%% of a core; engine: %d steps that re-decided, %d checks re-decided; samples (10/s) of stale checkers %v; load %s -> %s",
			name, c.Seconds(), w.Seconds(), 100*c.Seconds()/w.Seconds(), st.Advances-st0.Advances, st.Evaluations-st0.Evaluations, stale, l0, loadavg())
	}
	measure("no change")
	// Latency: flip one check at a time and watch the table and DNS.
	var lat, e2e []time.Duration
	missed := 0
flipping:
	for i := range flips {
		id := fmt.Sprintf("c%d", (i*7919+13)%checks)
		for _, down := range []bool{true, false} {
			word := "up"
			if down {
				word = "down"
			}
			sent := time.Now()
			send("set " + id + " " + word)
			var arrived, served time.Time
			for deadline := sent.Add(30 * time.Second); time.Now().Before(deadline); {
				now := time.Now()
				if arrived.IsZero() {
					healthy := 0
					for _, r := range n.pool.ReportsFor(id) {
						if r.Healthy {
							healthy++
						}
					}
					if (healthy < 2) == down {
						arrived = now
					}
				}
				if n.dns.Served(id) != down {
					served = time.Now()
					break
				}
				time.Sleep(20 * time.Microsecond)
			}
			if arrived.IsZero() || served.IsZero() {
				// Not obtained: said so, and after three such flips the next window runs.
				logf("flip %d (%s %s) not obtained: arrived %v, served %v", i, id, word, arrived, served)
				if missed++; missed == 3 {
					break flipping
				}
				continue
			}
			lat = append(lat, max(served.Sub(arrived), 0))
			e2e = append(e2e, served.Sub(sent))
		}
	}
	logf("report arrival to DNS serving the new verdict, %d flips (%d not obtained within 30s): %s", len(lat), missed, quantiles(lat))
	logf("checker publishing to DNS serving it (gossip included), %d flips: %s", len(e2e), quantiles(e2e))
	send(fmt.Sprintf("churn %d", checks/100))
	expect("churning")
	measure("1% of checks per minute")

	memory("end")
	logf("load at the end %s", loadavg())
}

// TestMeasureLocationScaleCheckers is the child of TestMeasureLocationScale: six checkers
// that report every check healthy, then follow commands on standard input ("churn N": flip
// N checks per minute, all six reports of each; "set ID up|down": set a check's six reports).
func TestMeasureLocationScaleCheckers(t *testing.T) {
	seed := os.Getenv("VIGIL_MEASURE_SEED")
	if seed == "" {
		t.Skip("the child of TestMeasureLocationScale")
	}
	checks := envInt("VIGIL_MEASURE_CHECKS", 1_000_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var nodes []*gossip.Pool
	var wg sync.WaitGroup
	defer wg.Wait()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	for _, r := range []string{"us-east", "eu-west", "sa-east"} {
		for k := 1; k <= 2; k++ {
			g, err := gossip.New(gossip.Config{ID: fmt.Sprintf("chk-%s-%d", r, k), Region: r, Roles: gossip.RoleChecker,
				Keys: [][]byte{testKey}, BindAddr: "127.0.0.1", Seeds: []string{seed}, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			for i := range checks {
				if err := g.Publish(fmt.Sprintf("c%d", i), gossip.Entry{Status: checker.StatusHealthy, Consecutive: 3, Latency: time.Millisecond}); err != nil {
					t.Fatal(err)
				}
			}
			nodes = append(nodes, g)
			wg.Go(func() { _ = g.Run(ctx) })
		}
	}
	fmt.Println("published")
	set := func(id string, healthy bool) {
		st := checker.StatusUnhealthy
		if healthy {
			st = checker.StatusHealthy
		}
		for _, g := range nodes {
			_ = g.Publish(id, gossip.Entry{Status: st, Consecutive: 3, Latency: time.Millisecond})
		}
	}
	var churn sync.WaitGroup
	stopChurn := func() {}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 2 && f[0] == "churn":
			stopChurn()
			churn.Wait()
			perMinute, _ := strconv.Atoi(f[1])
			if perMinute > 0 {
				cctx, ccancel := context.WithCancel(ctx)
				stopChurn = ccancel
				churn.Go(func() {
					// Every 100 ms, the next perMinute/600 checks flip; a pass over all of them
					// turns them unhealthy, the next one healthy again.
					tick := time.NewTicker(100 * time.Millisecond)
					defer tick.Stop()
					per := max(perMinute/600, 1)
					for next := 0; ; {
						select {
						case <-cctx.Done():
							return
						case <-tick.C:
						}
						for range per {
							set(fmt.Sprintf("c%d", next%checks), (next/checks)%2 == 1)
							next++
						}
					}
				})
			}
			fmt.Println("churning", perMinute)
		case len(f) == 3 && f[0] == "set":
			set(f[1], f[2] == "up")
		}
	}
	stopChurn()
	churn.Wait()
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// cpuTime returns the user and system CPU time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus returns a size field of /proc/self/status in bytes (0 when unreadable).
func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// memLimit describes the runtime's soft memory limit.
func memLimit() string {
	if l := debug.SetMemoryLimit(-1); l < math.MaxInt64 {
		return fmt.Sprintf("%.0f MiB", mib(uint64(l)))
	}
	return "none"
}

func liveAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// quantiles describes a sample: p50, p90, p99 and max.
func quantiles(d []time.Duration) string {
	if len(d) == 0 {
		return "no samples"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(int(p*float64(len(s))), len(s)-1)] }
	return fmt.Sprintf("p50 %v, p90 %v, p99 %v, max %v", q(0.5), q(0.9), q(0.99), s[len(s)-1])
}
