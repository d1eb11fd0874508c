package main

import (
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	lat := make([]time.Duration, 1000)
	for i := range lat {
		lat[i] = time.Duration(i+1) * time.Microsecond
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {0.999, 999 * time.Microsecond}, {1, 1000 * time.Microsecond}} {
		if got := quantile(lat, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := quantile(lat[:1], 0.99); got != time.Microsecond {
		t.Errorf("quantile of one = %v", got)
	}
}

func TestVigils(t *testing.T) {
	for _, c := range []struct{ flag, want, err string }{
		{"/tmp/v", "vigil=/tmp/v", ""},
		{"main=/tmp/a,fast=/tmp/b", "vigil-main=/tmp/a vigil-fast=/tmp/b", ""},
		{"/tmp/a,/tmp/b", "", "name each"},
		{"main=", "", "not name=path"},
		{"", "", "no vigil binary"},
	} {
		bins, err := options{vigil: c.flag}.vigils()
		var got []string
		for _, b := range bins {
			got = append(got, b.name+"="+b.path)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one with %q", c.flag, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%q: %v %v, want %s", c.flag, got, err, c.want)
		}
	}
}

// TestReport checks the tables on made-up results: a server that loses queries at a rate
// below its saturation fails that target, one that loses them only over its saturation does
// not; the p99 target is read at 50,000 offered; the per CPU-second ratios are to Knot's.
func TestReport(t *testing.T) {
	o := options{rounds: 1, servers: []string{"vigil", "knot"}, mixes: []string{"names"},
		rates: []int{50000, 90000}, rateMix: "names", workers: 2, names: 10}
	run := func(server string, offered int, qps float64, lost int, cpu float64, p99 time.Duration) result {
		return result{round: 1, mix: "names", server: server, offered: offered, qps: qps, sent: 100000 + lost,
			done: 100000, drops: lost, runtime: 1, cpu: cpu, p50: p99 / 2, p99: p99, p999: p99 * 2}
	}
	res := []result{
		run("vigil-a", 0, 80000, 0, 0.5, 2*time.Millisecond), // 200,000 per CPU-second
		run("vigil-b", 0, 60000, 0, 1, 2*time.Millisecond),   // 100,000
		run("knot", 0, 70000, 0, 1, 2*time.Millisecond),      // 100,000
		run("vigil-a", 50000, 50000, 0, 0.5, 800*time.Microsecond),
		run("vigil-b", 50000, 50000, 7, 1, 3*time.Millisecond),
		run("knot", 50000, 50000, 0, 1, 900*time.Microsecond),
		run("vigil-a", 90000, 80000, 0, 0.5, 5*time.Millisecond),
		run("vigil-b", 90000, 60000, 0, 1, 9*time.Millisecond),
		run("knot", 90000, 70000, 5, 1, 9*time.Millisecond), // over its saturation: does not count
	}
	tab := table(res, o)
	t.Log("\n" + tab)
	for _, row := range []string{
		"| vigil-a | - | 2.00× yes, 1.14× yes | 0.800 ms yes | 0 lost in 1 runs yes |",
		"| vigil-b | - | 1.00× no, 0.86× no | 3.000 ms no | 7 lost in 1 runs no |",
		"| knot | - | - | 0.900 ms yes | 0 lost in 1 runs yes |",
		"| 90000 | knot | 70000 (70000–70000) | 100000 (100000–100000) | 9.000 ms (9.000 ms–9.000 ms) | 0/1 | - | 5 of 100005 (1 runs) |",
		"| 1 | 50000 | vigil-b | 100007 | 50000 | 100000 | 1.500 ms | 3.000 ms | 6.000 ms | 7 | 7 | yes (60000) |",
	} {
		if !strings.Contains(tab, row) {
			t.Errorf("no row %q", row)
		}
	}
}
