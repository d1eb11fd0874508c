package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOneTinyRound runs the harness for one round of every mix at saturation and of one
// offered rate (2,000 queries a second, far below any server's saturation) against every
// server, each run a second and a half, on a zone of 200 names, and checks that every server
// answered every run (queries completed, none lost, server CPU time counted, latencies read),
// that the fixed-rate runs offered their rate, and that the tables have a row for each run
// and one for each server in the targets; and that Vigil's flip mix flipped the verdict. It needs dnsperf, NSD and
// Knot (Debian packages dnsperf, nsd, knot) and builds vigil from this tree.
func TestOneTinyRound(t *testing.T) {
	for _, name := range []string{"dnsperf", "nsd", "knotd"} {
		if _, err := tool(name); err != nil {
			if _, err := exec.LookPath(name); err != nil {
				t.Skipf("%s is not installed: %v", name, err)
			}
		}
	}
	vigil := filepath.Join(t.TempDir(), "vigil")
	build := exec.Command("go", "build", "-o", vigil, "github.com/vigil-dns/vigil/cmd/vigil")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build vigil: %v\n%s", err, out)
	}
	o := options{rounds: 1, duration: 1500 * time.Millisecond, vigil: vigil, names: 200,
		servers: []string{"vigil", "nsd", "knot"}, mixes: []string{"hot", "names", "flip", "nxdomain"},
		rates: []int{2000}, rateMix: "names", rateOutstanding: 200,
		latency: true, clients: 4, outstanding: 20, workers: 2}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log io.Writer = io.Discard
	if testing.Verbose() {
		log = os.Stderr
	}
	res, err := run(ctx, o, log)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(o.servers) * (len(o.mixes) + len(o.rates)); len(res) != want {
		t.Fatalf("%d results, want %d", len(res), want)
	}
	tab := table(res, o)
	t.Log("\n" + tab)
	for _, r := range res {
		if r.qps <= 0 || r.done == 0 || r.cpu <= 0 || r.p50 <= 0 || r.p99 < r.p50 || r.p999 < r.p99 {
			t.Errorf("round %d %s@%d %s: %.0f qps, %d completed, %.2f CPU s, p50 %v p99 %v p99.9 %v: want all positive, in order",
				r.round, r.mix, r.offered, r.server, r.qps, r.done, r.cpu, r.p50, r.p99, r.p999)
		}
		// dnsperf offers the rate asked: within a tenth, measured over its own run time.
		if r.offered > 0 && (r.sentRate() < 0.9*float64(r.offered) || r.sentRate() > 1.1*float64(r.offered)) {
			t.Errorf("%s at %d offered: dnsperf sent %.0f a second", r.server, r.offered, r.sentRate())
		}
		if r.sent != r.done {
			t.Errorf("%s %s: %d of %d queries lost", r.mix, r.server, r.sent-r.done, r.sent)
		}
		if r.mix == "flip" && r.server == "vigil" && r.flips == 0 {
			t.Errorf("vigil's flip mix made no flip")
		}
		row := "| 1 | " + r.mix + " | " + r.server + " | "
		if r.offered > 0 {
			row = fmt.Sprintf("| 1 | %d | %s | ", r.offered, r.server)
		}
		if !strings.Contains(tab, row) {
			t.Errorf("the table has no row %q", row)
		}
	}
	for _, srv := range o.servers {
		if !strings.Contains(tab, "\n| "+srv+" | ") {
			t.Errorf("the targets table has no row for %s", srv)
		}
	}
}
