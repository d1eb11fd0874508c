package verify

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestStatusPageFixture: the report the status page's browser test draws
// (status/testdata/verification.json) is a Report as this package serves it: every field
// known, none missing, so that the page is tested against the real shape.
func TestStatusPageFixture(t *testing.T) {
	raw, err := os.ReadFile("../testdata/verification.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("the fixture is not a Report: %v", err)
	}
	var fixture, served map[string]any
	again, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &fixture); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &served); err != nil {
		t.Fatal(err)
	}
	for k := range served {
		if _, ok := fixture[k]; !ok {
			t.Errorf("the fixture lacks %q, which a Report serves", k)
		}
	}
}
