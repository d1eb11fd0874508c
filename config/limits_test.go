package config

import (
	"fmt"
	"strings"
	"testing"
)

// scaleYAML writes a document of n tcp checks and, for each, a multivalue record set that it
// decides, spread over zones of 1,000 record sets. With anchors, every check takes its
// settings from one template through a merge key (<<: *tcp), as configurations written by
// hand often do.
func scaleYAML(n int, anchors bool) string {
	var b strings.Builder
	b.WriteString("regions: [us-east, eu-west, sa-east]\n")
	if anchors {
		b.WriteString("templates:\n") // unknown field: replaced below
	}
	b.WriteString("checks:\n")
	for i := range n {
		if anchors && i == 0 {
			fmt.Fprintf(&b, "  - &tcp {protocol: tcp, interval: 30s, timeout: 5s, failure_threshold: 2, checkers_per_region: 2, id: c%d, target: {host: 127.0.0.1, port: %d}}\n", i, 1+i%60000)
			continue
		}
		if anchors {
			fmt.Fprintf(&b, "  - {<<: *tcp, id: c%d, target: {host: 127.0.0.1, port: %d}}\n", i, 1+i%60000)
			continue
		}
		fmt.Fprintf(&b, "  - {id: c%d, protocol: tcp, target: {host: 127.0.0.1, port: %d}}\n", i, 1+i%60000)
	}
	b.WriteString("zones:\n")
	for i := range n {
		if i%1000 == 0 {
			fmt.Fprintf(&b, "  - name: z%d.scale.test\n    name_servers: [ns1.scale.test]\n    record_sets:\n", i/1000)
		}
		fmt.Fprintf(&b, "      - {name: h%d, type: A, policy: multivalue, records: [{value: 192.0.2.%d, health_check: c%d}]}\n", i, 1+i%250, i)
	}
	return strings.Replace(b.String(), "templates:\n", "", 1)
}

// TestLargeDocumentAccepted: a document of 100,000 checks with one record set each, written
// out or through a template alias, decodes and validates: the alias limit does not refuse
// real configurations of that size (before, every document of more than 1,000,000 YAML
// values was refused, aliases or not).
func TestLargeDocumentAccepted(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 100,000 checks")
	}
	for _, anchors := range []bool{false, true} {
		doc, err := Parse([]byte(scaleYAML(100_000, anchors)))
		if err != nil {
			msg := err.Error()
			t.Fatalf("anchors=%v: %.300s", anchors, msg)
		}
		if len(doc.Checks) != 100_000 || len(doc.Zones) != 100 || doc.Checks[99_999].Interval.Std().Seconds() != map[bool]float64{false: 10, true: 30}[anchors] {
			t.Fatalf("anchors=%v: %d checks, %d zones, last interval %s", anchors, len(doc.Checks), len(doc.Zones), doc.Checks[99_999].Interval.Std())
		}
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
	if _, err := Decode([]byte(scaleYAML(2000, true))); err != nil {
		t.Fatalf("template document: %.300s", err.Error())
	}
}
