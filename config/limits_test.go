package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// templateYAML writes a document of n tcp checks that all take their settings from one
// template through a merge key (<<: *tcp), as configurations written by hand often do.
func templateYAML(n int) string {
	var b strings.Builder
	b.WriteString("regions: [us-east, eu-west, sa-east]\nchecks:\n")
	for i := range n {
		if i == 0 {
			fmt.Fprintf(&b, "  - &tcp {protocol: tcp, interval: 30s, timeout: 5s, failure_threshold: 2, checkers_per_region: 2, id: c%d, target: {host: 127.0.0.1, port: %d}}\n", i, 1+i%60000)
			continue
		}
		fmt.Fprintf(&b, "  - {<<: *tcp, id: c%d, target: {host: 127.0.0.1, port: %d}}\n", i, 1+i%60000)
	}
	return b.String()
}

// TestLargeDocumentAccepted: a document of 100,000 checks with one record set each, written
// out or through a template alias, decodes and validates: the alias limit does not refuse
// real configurations of that size (before, every document of more than 1,000,000 YAML
// values was refused, aliases or not).
func TestLargeDocumentAccepted(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 100,000 checks")
	}
	var b strings.Builder
	if err := (Scale{Checks: 100_000}).WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	doc, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("%.300s", err.Error())
	}
	if len(doc.Checks) != 100_000 || len(doc.Zones) != 100 {
		t.Fatalf("%d checks, %d zones", len(doc.Checks), len(doc.Zones))
	}
	doc, err = Parse([]byte(templateYAML(100_000)))
	if err != nil {
		t.Fatalf("template: %.300s", err.Error())
	}
	if c := doc.Checks[99_999]; c.Interval.Std() != 30*time.Second || c.FailureThreshold != 2 {
		t.Fatalf("template not applied: %+v", c)
	}
}

// TestAliasBudgetScalesWithInput: the alias limit is separate from the size of what is
// written out, and scales with the bytes of the input. The same alias bomb is refused
// whatever padding of plain values surrounds it up to its own expansion, and a document whose
// aliases expand to less than its size passes.
func TestAliasBudgetScalesWithInput(t *testing.T) {
	if got := aliasBudget(10); got != minAliasBudget {
		t.Fatalf("budget of a small document = %d, want %d", got, minAliasBudget)
	}
	if got := aliasBudget(5 << 20); got != 5<<20 {
		t.Fatalf("budget of 5 MiB = %d, want one value per byte", got)
	}
	// 100 records in a set named 100 times in a zone named 100 times: about 3,000,000 values
	// from 4 kB; with 1 MB of values written out beside it, still far beyond one per byte.
	var bomb strings.Builder
	bomb.WriteString("regions: [us-east]\nzones:\n  - &z\n    name: a.test\n    record_sets:\n      - &s\n        name: www\n        type: A\n        records: [")
	for i := range 100 {
		fmt.Fprintf(&bomb, "{value: 192.0.2.%d}, ", i+1)
	}
	bomb.WriteString("]\n" + strings.Repeat("      - *s\n", 99) + strings.Repeat("  - *z\n", 99))
	padded := bomb.String() + "  - name: pad.test\n    record_sets:\n      - name: txt\n        type: TXT\n        records:\n" + strings.Repeat("          - value: padding\n", 40_000)
	for _, doc := range []string{bomb.String(), padded} {
		if _, err := Decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), "aliases expand") {
			t.Fatalf("alias bomb of %d bytes: got %v, want an alias expansion error", len(doc), err)
		}
	}
	// A template used by 2,000 checks: the expansion stays far below one value per byte.
	if _, err := Decode([]byte(templateYAML(2000))); err != nil {
		t.Fatalf("template document: %.300s", err.Error())
	}
}

// TestScaleDocument: the document Scale builds is the one its YAML decodes to, and valid.
func TestScaleDocument(t *testing.T) {
	s := Scale{Checks: 2500, ZoneSize: 1000, Protocol: ProtocolHTTP, Port: 8080, Path: "/healthz", Interval: 300 * time.Second}
	var b strings.Builder
	if err := s.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("%.300s", err.Error())
	}
	built := s.Document()
	if err := built.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parsed, built) {
		t.Fatalf("the YAML and the built document differ:\n%+v\n%+v", parsed.Checks[0], built.Checks[0])
	}
	if len(built.Zones) != 3 || len(built.Zones[2].RecordSets) != 500 {
		t.Fatalf("%d zones", len(built.Zones))
	}
}
