package checker

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
)

// The throughput benchmarks probe targets served by a child process (this test binary run
// as TestBenchTargetServer), so that the CPU time measured with getrusage(RUSAGE_SELF) is the
// prober's alone; the child's own CPU time is reported beside it.

const benchTargetsEnv = "VIGIL_BENCH_TARGETS"

// TestBenchTargetServer is not a test: run as a child process by the benchmarks, it serves
// HTTP on 127.0.0.1-16 and prints its addresses, until its stdin closes.
func TestBenchTargetServer(t *testing.T) {
	if os.Getenv(benchTargetsEnv) == "" {
		t.Skip("only runs as the benchmarks' target process")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	for i := range 16 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", i+1))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		go (&http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}).Serve(ln)
		fmt.Println(ln.Addr())
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// benchTargets starts the target process and returns its addresses, and a function that
// stops it and returns the CPU time it used.
func benchTargets(b *testing.B) ([]netip.AddrPort, func() time.Duration) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchTargetServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchTargetsEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var addrs []netip.AddrPort
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
		ap, err := netip.ParseAddrPort(sc.Text())
		if err != nil {
			cmd.Process.Kill()
			b.Fatalf("target process: %s", sc.Text())
		}
		addrs = append(addrs, ap)
	}
	stopped := false
	stop := func() time.Duration {
		if !stopped {
			stopped = true
			stdin.Close()
			cmd.Wait()
		}
		return cmd.ProcessState.SystemTime() + cmd.ProcessState.UserTime()
	}
	b.Cleanup(func() { stop() })
	return addrs, stop
}

// cpuTime is this process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parallelProbes runs n probes with conc goroutines and returns how many failed.
func parallelProbes(n, conc int, probe func(i int) bool) int64 {
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if !probe(int(i)) {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return failed.Load()
}

func reportCPU(b *testing.B, cpu time.Duration, probes int, failed int64) {
	b.ReportMetric(float64(probes)/cpu.Seconds(), "probes/cpu-s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(probes), "cpu-µs/probe")
	if failed > int64(probes)/100 {
		b.Errorf("%d of %d probes failed", failed, probes)
	}
}

// BenchmarkHTTPProbes measures HTTP probes per CPU-second of this process against local
// targets: Vigil's prober alone, each probe on a fresh connection as a check asks by default
// (prober) or, for checks with keep_alive, on the connection its check's previous probe kept
// (prober-keepalive); the whole checker (scheduler, rise/fall, metrics); and a baseline of
// net/http with keep-alives disabled.
func BenchmarkHTTPProbes(b *testing.B) {
	targets, stopTargets := benchTargets(b)
	checks := make([]config.Check, len(targets))
	kept := make([]config.Check, len(targets))
	for i, ap := range targets {
		checks[i] = checkFor(fmt.Sprintf("t%d", i), config.ProtocolHTTP, ap)
		checks[i].BodyMatch = "ok"
		kept[i] = checks[i]
		kept[i].KeepAlive = true
	}
	const conc = 32
	var serverCPUBefore time.Duration

	for _, mode := range []string{"prober", "prober-keepalive"} {
		cs := checks
		if mode == "prober-keepalive" {
			cs = kept
		}
		b.Run(mode, func(b *testing.B) {
			p := loopbackProber(ProberOptions{})
			defer p.CloseIdle()
			cpu0 := cpuTime()
			failed := parallelProbes(b.N, conc, func(i int) bool {
				return p.Probe(context.Background(), &cs[i%len(cs)]).Healthy
			})
			reportCPU(b, cpuTime()-cpu0, b.N, failed)
		})
	}

	b.Run("nethttp-baseline", func(b *testing.B) {
		client := &http.Client{
			Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
			Timeout:   4 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
		urls := make([]string, len(targets))
		for i, ap := range targets {
			urls[i] = "http://" + ap.String() + "/"
		}
		cpu0 := cpuTime()
		failed := parallelProbes(b.N, conc, func(i int) bool {
			resp, err := client.Get(urls[i%len(urls)])
			if err != nil {
				return false
			}
			body, err := io.ReadAll(io.LimitReader(resp.Body, config.BodyMatchLimit))
			resp.Body.Close()
			return err == nil && resp.StatusCode < 400 && string(body) == "ok"
		})
		reportCPU(b, cpuTime()-cpu0, b.N, failed)
	})

	b.Run("checker", func(b *testing.B) {
		// 2,000 checks at a 1 s interval: about 2,000 probes a second offered, as a
		// checker with that assignment runs them.
		var done atomic.Int64
		var failed atomic.Int64
		finished := make(chan struct{})
		c, err := New(Options{Name: "bench", Logger: quiet(), Concurrency: conc,
			Prober: ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}},
			OnResult: func(_ string, r Result) {
				if !r.Healthy {
					failed.Add(1)
				}
				if done.Add(1) == int64(b.N) {
					close(finished)
				}
			}})
		if err != nil {
			b.Fatal(err)
		}
		many := make([]config.Check, 2000)
		for i := range many {
			many[i] = checks[i%len(checks)]
			many[i].ID = fmt.Sprintf("c%d", i)
			many[i].Interval = config.Duration(time.Second)
		}
		if err := c.SetChecks(many); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		cpu0 := cpuTime()
		go func() { c.Run(ctx); close(stopped) }()
		<-finished
		cpu := cpuTime() - cpu0
		cancel()
		<-stopped
		reportCPU(b, cpu, b.N, failed.Load())
	})

	server := stopTargets() - serverCPUBefore
	b.Logf("target process (not counted above): %v CPU over all sub-benchmarks", server)
}

// BenchmarkHundredThousandChecks measures, with 100,000 checks assigned and probing (300 s
// interval, real targets), the heap per assigned check in steady state and the checker's
// goroutines. Run it once: -benchtime=1x.
func BenchmarkHundredThousandChecks(b *testing.B) {
	targets, _ := benchTargets(b)
	const n, conc = 100_000, 64
	for range b.N {
		checks := manyChecks(n, targets)
		var results atomic.Int64
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		c, err := New(Options{Name: "scale", Logger: quiet(), Concurrency: conc,
			Prober:   ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}},
			OnResult: func(string, Result) { results.Add(1) }})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.SetChecks(checks); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { c.Run(ctx); close(stopped) }()
		most := 0
		for range 30 {
			time.Sleep(100 * time.Millisecond)
			most = max(most, checkerGoroutines())
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(checks)
		cancel()
		<-stopped
		b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/n, "heap-bytes/check")
		b.ReportMetric(float64(most), "checker-goroutines")
		b.ReportMetric(float64(runtime.NumGoroutine()), "process-goroutines-after")
		b.ReportMetric(float64(results.Load()), "probes-in-3s")
	}
}

// BenchmarkHostileMixLag runs 200 healthy checks beside 20 hostile endpoints for 10 s at a
// 1 s interval and reports the scheduler lag of the healthy checks' probes. Run it once:
// -benchtime=1x.
func BenchmarkHostileMixLag(b *testing.B) {
	b.Run("healthy-only", func(b *testing.B) { benchMix(b, false) })
	b.Run("with-hostile", func(b *testing.B) { benchMix(b, true) })
}

func benchMix(b *testing.B, withHostile bool) {
	for range b.N {
		c, rec, _, stop := startMix(b, withHostile)
		cpu0, t0 := cpuTime(), time.Now()
		time.Sleep(10 * time.Second)
		stop()
		b.ReportMetric((cpuTime()-cpu0).Seconds()/time.Since(t0).Seconds(), "process-cpu-cores")
		rec.mu.Lock()
		b.ReportMetric(float64(len(rec.lags)), "healthy-probes")
		b.ReportMetric(float64(quantile(rec.lags, 0.5).Microseconds())/1000, "lag-p50-ms")
		b.ReportMetric(float64(quantile(rec.lags, 0.99).Microseconds())/1000, "lag-p99-ms")
		b.ReportMetric(float64(quantile(rec.lags, 1).Microseconds())/1000, "lag-max-ms")
		b.ReportMetric(float64(len(rec.failures)), "healthy-failed")
		b.ReportMetric(testutil.ToFloat64(c.metrics.skipped), "skipped")
		rec.mu.Unlock()
	}
}

// BenchmarkH2Probes measures what a probe of an https server that speaks only HTTP/2 costs:
// Vigil's prober, which offers h2 alone to a server it has seen speak only h2 (prober), the
// same without that memory, offering http/1.1 first and connecting again each time
// (prober-first-contact), and net/http's own HTTP/2 client (nethttp-h2). Every probe is one
// GET on a fresh TLS connection with a body match; the server runs in this process, so the
// CPU per probe counts both ends of each exchange.
func BenchmarkH2Probes(b *testing.B) {
	ca := newTestCA(b)
	now := time.Now()
	cert := ca.leaf(b, []string{"h2.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	ap := h2OnlyServer(b, cert, false, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	c := checkFor("h2", config.ProtocolHTTPS, ap)
	c.HostHeader, c.BodyMatch = "h2.example.test", "ok"
	c.Timeout = config.Duration(10 * time.Second)
	const conc = 4
	for _, mode := range []string{"prober", "prober-first-contact"} {
		b.Run(mode, func(b *testing.B) {
			p := loopbackProber(ProberOptions{RootCAs: ca.pool})
			p.h2only.off = mode == "prober-first-contact"
			cpu0 := cpuTime()
			failed := parallelProbes(b.N, conc, func(int) bool {
				r := p.Probe(context.Background(), &c)
				return r.Healthy && r.Protocol == "h2"
			})
			reportCPU(b, cpuTime()-cpu0, b.N, failed)
		})
	}
	b.Run("nethttp-h2", func(b *testing.B) {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: ca.pool, ServerName: "h2.example.test"},
			ForceAttemptHTTP2: true,
			DisableKeepAlives: true,
			Proxy:             nil,
		}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		url := "https://" + ap.String() + "/"
		cpu0 := cpuTime()
		failed := parallelProbes(b.N, conc, func(int) bool {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Host = "h2.example.test"
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			body, err := io.ReadAll(io.LimitReader(resp.Body, config.BodyMatchLimit))
			resp.Body.Close()
			return err == nil && resp.ProtoMajor == 2 && resp.StatusCode < 400 && string(body) == "ok"
		})
		reportCPU(b, cpuTime()-cpu0, b.N, failed)
	})
}
