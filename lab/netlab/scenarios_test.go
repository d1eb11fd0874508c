package netlab

import (
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/lab/sim"
)

// Every scenario parses and runs on a real network.
func TestScenariosParse(t *testing.T) {
	names := Scenarios()
	for _, want := range []string{"story", "nontransitive", "isolated", "oneway", "wan", "flapping", "leader-kill", "checkers-killed", "location-restart"} {
		if !slices.Contains(names, want) {
			t.Errorf("no scenario %q (have %q)", want, names)
		}
	}
	for _, name := range names {
		sc, err := Scenario(name, DefaultRegions())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := Supported(sc); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Scenario("nope", DefaultRegions()); err == nil {
		t.Error("an unknown scenario: no error")
	}
}

// A script with a step the real network cannot apply is refused before anything starts.
func TestUnsupportedSteps(t *testing.T) {
	for _, text := range []string{"wait 5s\n", "offline us-east-checker-1\n", "network poison\nhold 1s\n", "grow 3\n"} {
		sc, err := sim.ParseScript("t", strings.NewReader(text), DefaultRegions())
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if err := Supported(sc); err == nil {
			t.Errorf("%q: no error", text)
		}
	}
}
