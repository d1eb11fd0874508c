package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOneTinyRound runs the harness for one round of every mix against every server, each
// run a second and a half, on a zone of 200 names, and checks that every server answered
// every mix (queries completed, none lost, server CPU time counted) and that the table has a
// row for each; and that Vigil's flip mix flipped the verdict. It needs dnsperf, NSD and
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
	if len(res) != len(o.servers)*len(o.mixes) {
		t.Fatalf("%d results, want %d", len(res), len(o.servers)*len(o.mixes))
	}
	tab := table(res, o)
	t.Log("\n" + tab)
	for _, r := range res {
		if r.qps <= 0 || r.done == 0 || r.cpu <= 0 || r.p99 <= 0 {
			t.Errorf("round %d %s %s: %.0f qps, %d completed, %.2f CPU s, p99 %v: want all positive", r.round, r.mix, r.server, r.qps, r.done, r.cpu, r.p99)
		}
		if r.sent != r.done {
			t.Errorf("%s %s: %d of %d queries lost", r.mix, r.server, r.sent-r.done, r.sent)
		}
		if r.mix == "flip" && r.server == "vigil" && r.flips == 0 {
			t.Errorf("vigil's flip mix made no flip")
		}
		row := "| 1 | " + r.mix + " | " + r.server + " | "
		if !strings.Contains(tab, row) {
			t.Errorf("the table has no row %q", row)
		}
	}
}
