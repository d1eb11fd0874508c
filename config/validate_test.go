package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden .err files of testdata/invalid from the current messages")

// TestInvalidFiles parses every file of testdata/invalid and compares the whole error, every
// problem with its path, to the golden NAME.err beside NAME.yaml.
func TestInvalidFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("found %d invalid files, want at least 40: is the test running in the config folder?", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Parse(data)
			if err == nil {
				t.Fatalf("Parse accepted an invalid document: %+v", doc)
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("Parse returned %T, want Errors: %v", err, err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("no golden file (run go test -update and read it): %v", err)
			}
			if got != string(want) {
				t.Errorf("messages differ from %s\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

// TestGoldenFilesHaveInputs keeps testdata/invalid free of goldens whose input is gone.
func TestGoldenFilesHaveInputs(t *testing.T) {
	goldens, err := filepath.Glob("testdata/invalid/*.err")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goldens {
		if _, err := os.Stat(strings.TrimSuffix(g, ".err") + ".yaml"); err != nil {
			t.Errorf("%s has no input: %v", g, err)
		}
	}
}

// TestErrorsCarryPaths checks that every problem of a document that parses as YAML names the
// field it is about, so an operator can find it.
func TestErrorsCarryPaths(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	wholeDocument := map[string]bool{"empty": true, "two-documents": true, "second-document-broken": true, "syntax": true, "not-a-mapping": true}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		if wholeDocument[name] {
			continue
		}
		data, _ := os.ReadFile(file)
		_, err := Parse(data)
		var es Errors
		if !errors.As(err, &es) {
			t.Fatalf("%s: got %v, want Errors", name, err)
		}
		for _, e := range es {
			if e.Path == "" {
				t.Errorf("%s: problem without a path: %q", name, e.Message)
			}
		}
	}
}

// TestValidateReportsEverything checks on one document that problems in every section are
// reported together, in document order.
func TestValidateReportsEverything(t *testing.T) {
	_, err := Load("testdata/invalid/many-problems.yaml")
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("got %v, want Errors", err)
	}
	want := []string{
		"checks[0].timeout",
		"checks[1].regions",
		"checks[2].children[2]",
		"zones[0].record_sets[0].records",
		"zones[0].record_sets[1].records[1].weight",
		"zones[0].record_sets[2]",
	}
	if len(es) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(es), len(want), err)
	}
	for i, e := range es {
		if e.Path != want[i] {
			t.Errorf("problem %d is at %q, want %q (%s)", i, e.Path, want[i], e.Message)
		}
	}
}

// TestValidateNeverNormalised validates documents built in Go, as other packages and tests
// build them: relative names, empty policies and default ports count as their defaults, and
// the document is left as it was.
func TestValidateNeverNormalised(t *testing.T) {
	build := func() *Document {
		web := DefaultCheck()
		web.ID, web.Protocol, web.Target, web.Method = "web", ProtocolHTTP, Target{Host: "192.0.2.1"}, "get"
		both := Check{ID: "both", Protocol: ProtocolCalculated, Children: []string{"web"}}
		zone := DefaultZone()
		zone.Name = "Example.TEST"
		zone.RecordSets = []RecordSet{
			{Name: "www", Type: TypeA, Policy: PolicyMultivalue, Records: []Record{{Value: "192.0.2.1", HealthCheck: "both"}}},
			{Name: "@", Type: TypeMX, Records: []Record{{Value: "10 mail.example.test"}}},
		}
		doc := DefaultDocument()
		doc.Regions = []string{"us-east", "eu-west", "ap-south"}
		doc.Checks = []Check{web, both}
		doc.Zones = []Zone{zone}
		return &doc
	}
	doc := build()
	if err := doc.Validate(); err != nil {
		t.Fatalf("a valid document built in Go: %v", err)
	}
	if !reflect.DeepEqual(doc, build()) {
		t.Errorf("Validate changed the document: %+v", doc)
	}

	// The same document with a mistake behind each default still fails where it should.
	doc.Zones[0].RecordSets[1].Name = "www"
	doc.Zones[0].RecordSets[1].Type = TypeCNAME
	doc.Zones[0].RecordSets[1].Records[0].Value = "elsewhere.test"
	err := doc.Validate()
	want := "zones[0].record_sets[1]: a CNAME cannot share its name with another record set: www.example.test. has A at record_sets[0]"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestValidateEmpty checks that zero values give errors, never a panic.
func TestValidateEmpty(t *testing.T) {
	var nilDoc *Document
	if err := nilDoc.Validate(); err == nil {
		t.Error("a nil document validated")
	}
	doc := &Document{Checks: make([]Check, 2), Zones: []Zone{{RecordSets: make([]RecordSet, 1)}}}
	doc.Zones[0].RecordSets[0].Records = make([]Record, 1)
	err := doc.Validate()
	var es Errors
	if !errors.As(err, &es) || len(es) < 10 {
		t.Fatalf("got %v, want many problems", err)
	}
	doc.normalize() // must not panic either
}

// TestValidateSameWithoutNormalize validates every test document twice, as written and
// normalised: the problems must be found at the same paths. Validate reads empty fields as
// their defaults and relative names against their zone, so it needs no normalising first.
func TestValidateSameWithoutNormalize(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	valid, _ := filepath.Glob("testdata/valid/*")
	files = append(append(files, valid...), "../examples/demo.yaml")
	compared := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := decodeRaw(data)
		if err != nil {
			continue // a problem of form: nothing to validate
		}
		normal, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: Decode failed after decodeRaw succeeded: %v", file, err)
		}
		if paths(raw.Validate()) != paths(normal.Validate()) {
			t.Errorf("%s: paths differ\nas written: %s\nnormalised: %s", file, paths(raw.Validate()), paths(normal.Validate()))
		}
		compared++
	}
	if compared < 30 {
		t.Errorf("compared only %d documents", compared)
	}
}

// paths lists the paths of err's problems, one per line.
func paths(err error) string {
	var es Errors
	errors.As(err, &es)
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Path + "\n")
	}
	return b.String()
}
