package config

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Decode and Validate. Neither may panic; every error is
// an Errors list with messages; normalising is idempotent; and a document that validates
// survives a JSON round trip unchanged. Seeds: testdata/fuzz/FuzzParse, the valid and invalid
// test documents, and the demo.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/valid/*")
	invalid, _ := filepath.Glob("testdata/invalid/*.yaml")
	files = append(append(files, invalid...), "../examples/demo.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Decode(data)
		if err != nil {
			assertErrors(t, err)
			return
		}
		if !hasNaN(doc) {
			again, err := Decode(data)
			if err != nil {
				t.Fatalf("second Decode of the same bytes failed: %v", err)
			}
			again.normalize()
			if !reflect.DeepEqual(doc, again) {
				t.Fatalf("normalize is not idempotent\nonce  %+v\ntwice %+v", doc, again)
			}
		}
		if err := doc.Validate(); err != nil {
			assertErrors(t, err)
			return
		}
		js, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("a valid document does not marshal: %v", err)
		}
		back, err := Parse(js)
		if err != nil {
			t.Fatalf("the JSON form of a valid document does not parse: %v\n%s", err, js)
		}
		if !reflect.DeepEqual(doc, back) {
			t.Fatalf("JSON round trip differs\nyaml %+v\njson %+v", doc, back)
		}
	})
}

func assertErrors(t *testing.T, err error) {
	t.Helper()
	var es Errors
	if !errors.As(err, &es) || len(es) == 0 {
		t.Fatalf("error %T is not a non-empty Errors: %v", err, err)
	}
	for _, e := range es {
		if e.Message == "" || strings.Contains(e.Message, "%!") {
			t.Fatalf("bad message at %q: %q", e.Path, e.Message)
		}
	}
}

// hasNaN reports whether a check's threshold is NaN, which reflect.DeepEqual never equals.
func hasNaN(d *Document) bool {
	for _, c := range d.Checks {
		if math.IsNaN(c.HealthyThreshold) {
			return true
		}
	}
	return false
}

// TestAliasExpansionBounded decodes a small document whose aliases name millions of values:
// the loader must refuse it with an error, not walk or allocate all of them.
func TestAliasExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("regions: [us-east]\nzones:\n  - &z\n    name: a.test\n    record_sets:\n      - &s\n        name: www\n        type: A\n        records: [")
	for i := range 100 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{value: 192.0.2.1}")
	}
	b.WriteString("]\n")
	for range 99 {
		b.WriteString("      - *s\n")
	}
	for range 99 {
		b.WriteString("  - *z\n")
	}
	_, err := Decode([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "document too large") {
		t.Fatalf("got %v, want a document too large error", err)
	}
}
