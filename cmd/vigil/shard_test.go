package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
)

const demo = "../../examples/demo.yaml"

// runCLI runs vigil with args and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func decodeAnalysis(t *testing.T, out string) analysis {
	t.Helper()
	var a analysis
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return a
}

// The CLI's answer for a check equals the library's, computed here independently from the
// same synthesised membership.
func TestShardAnalyzeCheck(t *testing.T) {
	code, out, errs := runCLI(t, "shard", "analyze", "-f", demo, "--check", "web-us-east",
		"--checkers-per-region", "6", "--extra", "300", "--top", "5", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	a := decodeAnalysis(t, out)
	if a.Kind != "check" || a.Subject != "web-us-east" || len(a.Workers) != 6 || a.Others != 302 {
		t.Fatalf("kind %s subject %s workers %v others %d; want check web-us-east, 6 checkers, 302 others",
			a.Kind, a.Subject, a.Workers, a.Others)
	}
	doc, err := config.Load(demo)
	if err != nil {
		t.Fatal(err)
	}
	m := shard.Membership{}
	for _, r := range doc.Regions {
		for _, id := range []string{"01", "02", "03", "04", "05", "06"} {
			m[r] = append(m[r], r+"-checker-"+id)
		}
	}
	mine := map[string]bool{}
	for _, r := range doc.Regions {
		for _, c := range shard.NewRegion(r, m[r]).Shard("web-us-east", 2) {
			mine[r+"/"+c] = true
		}
	}
	for _, w := range a.Workers {
		if !mine[w] {
			t.Errorf("worker %s is not in the shard computed here %v", w, mine)
		}
	}
	// Count the histogram independently over the demo checks and the synthetic ones.
	others := []string{"web-eu-west", "web-sa-east"}
	for i := range 300 {
		others = append(others, fmt.Sprintf("extra-%07d", i+1))
	}
	hist := make([]int, 7)
	for _, id := range others {
		n := 0
		for _, r := range doc.Regions {
			for _, c := range shard.NewRegion(r, m[r]).Shard(id, 2) {
				if mine[r+"/"+c] {
					n++
				}
			}
		}
		hist[n]++
	}
	if !slices.Equal(a.Histogram, hist) || a.Contained != hist[6] {
		t.Errorf("histogram %v contained %d; counted %v", a.Histogram, a.Contained, hist)
	}
	if len(a.Neighbors) > 5 || len(a.Neighbors)+a.MoreNeighbors != 302-hist[0] {
		t.Errorf("%d neighbors listed + %d more, want at most 5 and %d in all", len(a.Neighbors), a.MoreNeighbors, 302-hist[0])
	}
	// The text form says the same.
	code, out, _ = runCLI(t, "shard", "analyze", "-f", demo, "--check", "web-us-east", "--checkers-per-region", "6", "--extra", "300")
	if code != 0 || !strings.Contains(out, "compared with 302 other checks") || !strings.Contains(out, "fully contained") {
		t.Errorf("text output:\n%s", out)
	}
}

// A stateful fleet keeps its guarantee through the CLI: no other zone shares more than 2 of
// the 4 name servers, and each server is hosted by two locations.
func TestShardAnalyzeZoneStateful(t *testing.T) {
	data, err := os.ReadFile(demo)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data) + "\nname_servers:\n  mode: stateful\n  fleet: 64\n"
	file := filepath.Join(t.TempDir(), "stateful.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "shard", "analyze", "-f", file, "--zone", "Demo.Vigil.Test", "--extra", "2000",
		"--locations", "gru,iad,fra", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	a := decodeAnalysis(t, out)
	if a.Subject != "demo.vigil.test." || a.Others != 2000 || len(a.Histogram) != 5 {
		t.Fatalf("subject %s others %d histogram %v", a.Subject, a.Others, a.Histogram)
	}
	if a.Histogram[3] != 0 || a.Histogram[4] != 0 || a.Contained != 0 {
		t.Errorf("stateful zones share more than 2 name servers: histogram %v, contained %d", a.Histogram, a.Contained)
	}
	if a.Histogram[2] == 0 {
		t.Errorf("with 2000 zones on 64 servers some must share 2: histogram %v", a.Histogram)
	}
	if len(a.Hosting) != 4 {
		t.Fatalf("hosting %v", a.Hosting)
	}
	for i, h := range a.Hosting {
		if h.Server != a.Workers[i] || !strings.HasPrefix(h.Server, "ns-") || !strings.HasSuffix(h.Server, ".ns.vigil.test.") || len(h.Locations) != 2 {
			t.Errorf("hosting %+v", h)
		}
	}
}

func TestShardAnalyzeErrors(t *testing.T) {
	dir := t.TempDir()
	badMembers := filepath.Join(dir, "members.yaml")
	if err := os.WriteFile(badMembers, []byte("us-east: [a, b]\nmars: [c]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dupMembers := filepath.Join(dir, "dup.yaml")
	if err := os.WriteFile(dupMembers, []byte("us-east: [a, b]\neu-west: [b]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notMap := filepath.Join(dir, "list.yaml")
	if err := os.WriteFile(notMap, []byte("- a\n- b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"shard"}, 2, "usage: vigil shard analyze"},
		{[]string{"shard", "analyze", "--check", "x"}, 2, "-f FILE is required"},
		{[]string{"shard", "analyze", "-f", demo}, 2, "exactly one of --check"},
		{[]string{"shard", "analyze", "-f", demo, "--check", "a", "--zone", "b"}, 2, "exactly one of --check"},
		{[]string{"shard", "analyze", "-f", demo, "--check", "a", "--extra", "-1"}, 2, "--extra -1"},
		{[]string{"shard", "analyze", "-f", demo, "--check", "nope"}, 1, `no probed check "nope"`},
		{[]string{"shard", "analyze", "-f", demo, "--check", "web-majority"}, 1, `no probed check "web-majority"`},
		{[]string{"shard", "analyze", "-f", demo, "--zone", "other.test"}, 1, "zone other.test. is not in"},
		{[]string{"shard", "analyze", "-f", demo, "--check", "web-us-east", "--membership", badMembers}, 1, `region "mars"`},
		{[]string{"shard", "analyze", "-f", demo, "--check", "web-us-east", "--membership", dupMembers}, 1, `checker "b" is in both`},
		{[]string{"shard", "analyze", "-f", demo, "--check", "web-us-east", "--membership", notMap}, 1, "want a mapping of region"},
		{[]string{"shard", "analyze", "-f", filepath.Join(dir, "missing.yaml"), "--check", "x"}, 1, "no such file"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	if code, out, _ := runCLI(t, "shard", "analyze", "--help"); code != 0 || !strings.Contains(out, "--checkers-per-region") && !strings.Contains(out, "-checkers-per-region") {
		t.Errorf("shard analyze --help: exit %d\n%s", code, out)
	}
}

// A membership file is read as written: the analysed shard comes from those checkers.
func TestShardAnalyzeMembershipFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "members.yaml")
	members := "us-east: [u1, u2, u3]\neu-west: [e1]\nsa-east: []\n"
	if err := os.WriteFile(file, []byte(members), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "shard", "analyze", "-f", demo, "--check", "web-eu-west", "--membership", file, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	a := decodeAnalysis(t, out)
	want := []string{"eu-west/e1"}
	for _, c := range shard.NewRegion("us-east", []string{"u1", "u2", "u3"}).Shard("web-eu-west", 2) {
		want = append(want, "us-east/"+c)
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(a.Workers))
	if !slices.Equal(got, want) {
		t.Errorf("workers %v, want %v", got, want)
	}
}

// Zones that name their own name servers keep them when they are on the fleet and are left
// out, with the reason, when they are not.
func TestShardAnalyzeExplicitNameServers(t *testing.T) {
	cfg := `regions: [us-east, eu-west, sa-east]
name_servers: {mode: stateful}
zones:
  - name: a.test
    name_servers: [ns-1.ns.vigil.test., ns-2.ns.vigil.test., ns-3.ns.vigil.test., ns-4.ns.vigil.test.]
  - name: b.test
    name_servers: [ns-1.ns.vigil.test., ns-2.ns.vigil.test., ns-3.ns.vigil.test., ns-9.ns.vigil.test.]
  - name: c.test
    name_servers: [ns1.example.com.]
  - name: d.test
`
	file := filepath.Join(t.TempDir(), "zones.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "shard", "analyze", "-f", file, "--zone", "a.test", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	a := decodeAnalysis(t, out)
	want := []string{"ns-1.ns.vigil.test.", "ns-2.ns.vigil.test.", "ns-3.ns.vigil.test.", "ns-4.ns.vigil.test."}
	if !slices.Equal(a.Workers, want) || a.Others != 1 {
		t.Errorf("workers %v others %d; want %v and 1 other (d.test)", a.Workers, a.Others, want)
	}
	if len(a.Skipped) != 2 || !strings.Contains(a.Skipped[0], "b.test.: ") || !strings.Contains(a.Skipped[0], "shares more than 2") ||
		!strings.Contains(a.Skipped[1], "c.test.: ") || !strings.Contains(a.Skipped[1], "not a name server of the fleet") {
		t.Errorf("skipped %q", a.Skipped)
	}
}
