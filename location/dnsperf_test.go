package location

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/dnssec"
)

// dnsperfResult is what one dnsperf run measured.
type dnsperfResult struct {
	qps                float64
	sent, completed    int
	avg                time.Duration
	p50, p90, p99, max time.Duration
}

// runDNSPerf runs dnsperf for seconds against addr with queries (one "name type" per line),
// with 10 clients, and returns its figures. With verbose, dnsperf prints every query's
// latency (-v), which gives the percentiles but costs dnsperf and this process CPU time that
// the server would otherwise have: the throughput of a run without it is the fair one.
func runDNSPerf(b *testing.B, addr string, queries []string, seconds int, verbose bool, rate int, do bool) dnsperfResult {
	b.Helper()
	var extra []string
	if do {
		extra = append(extra, "-D")
	}
	return runDNSPerfArgs(b, addr, queries, seconds, verbose, rate, extra...)
}

// runDNSPerfArgs is runDNSPerf with dnsperf's further arguments extra (e.g. -e for EDNS
// without the DO bit, -D for EDNS with it).
func runDNSPerfArgs(b *testing.B, addr string, queries []string, seconds int, verbose bool, rate int, extra ...string) dnsperfResult {
	b.Helper()
	path, err := exec.LookPath("dnsperf")
	if err != nil {
		b.Skip("dnsperf is not installed (Debian package dnsperf)")
	}
	data := filepath.Join(b.TempDir(), "queries.txt")
	if err := os.WriteFile(data, []byte(strings.Join(queries, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+30)*time.Second)
	defer cancel()
	args := []string{"-s", host, "-p", port, "-d", data, "-c", "10", "-l", strconv.Itoa(seconds), "-q", "100"}
	if verbose {
		args = append(args, "-v")
	}
	if rate > 0 {
		args = append(args, "-Q", strconv.Itoa(rate))
	}
	args = append(args, extra...)
	// The output goes to a file, read after the run, so that reading it takes no CPU time
	// from the server while dnsperf runs.
	outPath := filepath.Join(b.TempDir(), "dnsperf.out")
	outFile, err := os.Create(outPath)
	if err != nil {
		b.Fatal(err)
	}
	defer outFile.Close()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout = outFile
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("dnsperf: %v\n%s", err, stderr.String())
	}
	if _, err := outFile.Seek(0, 0); err != nil {
		b.Fatal(err)
	}
	var res dnsperfResult
	var lat []time.Duration
	sc := bufio.NewScanner(outFile)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case len(f) == 5 && f[0] == ">":
			if s, err := strconv.ParseFloat(f[4], 64); err == nil {
				lat = append(lat, time.Duration(s*float64(time.Second)))
			}
		case strings.HasPrefix(strings.TrimSpace(line), "Queries per second:"):
			res.qps, _ = strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "Queries per second:")), 64)
		case strings.HasPrefix(strings.TrimSpace(line), "Queries sent:"):
			res.sent, _ = strconv.Atoi(strings.Fields(line)[2])
		case strings.HasPrefix(strings.TrimSpace(line), "Average Latency (s):"):
			if avg, err := strconv.ParseFloat(strings.Fields(line)[3], 64); err == nil {
				res.avg = time.Duration(avg * float64(time.Second))
			}
		case strings.HasPrefix(strings.TrimSpace(line), "Queries completed:"):
			res.completed, _ = strconv.Atoi(strings.Fields(line)[2])
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	if (verbose && len(lat) == 0) || res.qps == 0 {
		b.Fatalf("dnsperf printed no figures\n%s", stderr.String())
	}
	if !verbose {
		return res
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	res.p50, res.p90, res.p99, res.max = pct(0.50), pct(0.90), pct(0.99), lat[len(lat)-1]
	return res
}

// BenchmarkDNSPerf runs dnsperf (10 clients, 100 queries outstanding) against a server on
// loopback for a plain record set, then for health-aware ones (weighted, failover and
// multivalue, with some records unhealthy): per sub-benchmark, a throughput run (as many
// queries a second as dnsperf can get answered; average latency) and a latency run at a fixed
// offered rate (VIGIL_DNSPERF_QPS, default 75,000; 0 for none) with per-query latencies, for
// the percentiles. The signed cases ask the same with the DO bit (dnsperf -D) of
// example.test signed by a combined key: every answer carries its RRSIG, from the signature
// cache after the first of each record set. VIGIL_DNSPERF_SECONDS sets the length of each run
// (default 10). Run it alone: go test -run '^$' -bench DNSPerf -benchtime 1x ./location/
func BenchmarkDNSPerf(b *testing.B) {
	seconds, rate := 10, 75000
	if v, err := strconv.Atoi(os.Getenv("VIGIL_DNSPERF_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	if v, err := strconv.Atoi(os.Getenv("VIGIL_DNSPERF_QPS")); err == nil && v >= 0 {
		rate = v
	}
	for _, c := range []struct {
		name    string
		queries []string
		signed  bool
	}{
		{"plain", []string{"www.example.test A"}, false},
		{"health-aware", []string{"wt.example.test A", "fo.example.test A", "mv.example.test A"}, false},
		{"plain-signed", []string{"www.example.test A"}, true},
		{"health-aware-signed", []string{"wt.example.test A", "fo.example.test A", "mv.example.test A"}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := startServer(b, Config{Registerer: prometheus.NewRegistry()})
			s.SetVerdicts(map[string]bool{"w1": false, "p": false, "m2": false})
			if c.signed {
				s.SetSigners(map[string]*dnssec.Signer{"example.test.": testSigner(b, dnssec.SchemeCombined)})
			}
			var fast, lat dnsperfResult
			for range b.N {
				fast = runDNSPerf(b, s.Addr().String(), c.queries, seconds, false, 0, c.signed)
				lat = runDNSPerf(b, s.Addr().String(), c.queries, seconds, true, rate, c.signed)
			}
			b.ReportMetric(fast.qps, "qps")
			b.ReportMetric(float64(fast.avg.Microseconds()), "avg-µs")
			b.ReportMetric(float64(lat.p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat.p99.Microseconds()), "p99-µs")
			b.Logf("%s: %.0f qps, %d sent, %d completed, average latency %v", c.name, fast.qps, fast.sent, fast.completed, fast.avg)
			b.Logf("%s at %d qps offered, per-query latencies (-v): %.0f qps, %d sent, %d completed, p50 %v p90 %v p99 %v max %v",
				c.name, rate, lat.qps, lat.sent, lat.completed, lat.p50, lat.p90, lat.p99, lat.max)
		})
	}
}
