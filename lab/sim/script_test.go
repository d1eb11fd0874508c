package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/lab/dev"
)

var testRegions = []string{"us-east", "eu-west", "sa-east"}

func TestParseScript(t *testing.T) {
	sc, err := ParseScript("t", strings.NewReader(`
# the São Paulo story
cut sa-east      # cut from every other
wait 45s
hold 3s
cut us-east eu-west
heal
down us-east
up us-east
wait
`), testRegions)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range sc.Steps {
		got = append(got, st.String())
	}
	want := "cut sa-east|wait 45s|hold 3s|cut us-east eu-west|heal|down us-east|up us-east|wait 1m0s"
	if strings.Join(got, "|") != want {
		t.Errorf("steps %q, want %q", strings.Join(got, "|"), want)
	}
	if sc.Steps[0].Line != 3 || sc.Steps[7].For != DefaultWait {
		t.Errorf("line %d, default wait %v", sc.Steps[0].Line, sc.Steps[7].For)
	}
}

func TestParseScriptNetwork(t *testing.T) {
	sc, err := ParseScript("t", strings.NewReader("network nodes\ncontrol-down\nrestart\noffline us-east-checker-1\nonline us-east-checker-1\nwait\n"), testRegions)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Network != NetworkNodes || len(sc.Steps) != 5 || !sc.needsControl() {
		t.Errorf("network %q, %d steps, needs control %v", sc.Network, len(sc.Steps), sc.needsControl())
	}
	if !sc.Steps[0].fault() || sc.Steps[1].fault() || !sc.Steps[2].fault() || !sc.Steps[3].repair() {
		t.Errorf("fault and repair steps: %v", sc.Steps)
	}
	sc, err = ParseScript("t", strings.NewReader("down us-east\n"), testRegions)
	if err != nil || sc.Network != "" || sc.needsControl() {
		t.Errorf("default network: %q, %v", sc.Network, err)
	}
}

func TestParseScriptErrors(t *testing.T) {
	tests := []struct{ script, want string }{
		{"", "sim: t: no steps"},
		{"# only a comment\n", "sim: t: no steps"},
		{"explode us-east", `sim: t:1: unknown step "explode" (steps: down, up, cut, heal, hold, wait, offline, online, control-down, restart, poison, cure, grow, measure, network, kill, start, kill-leader, cut-oneway, loss, latency)`},
		{"down", "sim: t:1: down takes one region, got 0 arguments"},
		{"down mars", `sim: t:1: down: unknown region "mars" (regions: us-east, eu-west, sa-east)`},
		{"cut", "sim: t:1: cut takes one region or two, got 0 arguments"},
		{"cut us-east us-east", "sim: t:1: cut: a region cannot be cut from itself"},
		{"cut a b c", "sim: t:1: cut takes one region or two, got 3 arguments"},
		{"heal now", "sim: t:1: heal takes no arguments, got 1"},
		{"hold", "sim: t:1: hold takes one duration, got 0 arguments"},
		{"hold forever", `sim: t:1: hold: "forever" is not a duration from 1ns to 1h`},
		{"hold -1s", `sim: t:1: hold: "-1s" is not a duration from 1ns to 1h`},
		{"wait 2h", `sim: t:1: wait: "2h" is not a duration from 1ns to 1h`},
		{"wait 1s 2s", "sim: t:1: wait takes at most one duration, got 2 arguments"},
		{"offline", "sim: t:1: offline takes one checker, got 0 arguments"},
		{"online a b", "sim: t:1: online takes one checker, got 2 arguments"},
		{"control-down now", "sim: t:1: control-down takes no arguments, got 1"},
		{"restart all", "sim: t:1: restart takes no arguments, got 1"},
		{"network mars", `sim: t:1: network takes dev, nodes, poison or poison-unsharded, got "mars"`},
		{"poison all", "sim: t:1: poison takes no arguments, got 1"},
		{"heal\nnetwork nodes", "sim: t:2: network must be the first step"},
		{"heal\n\ndown mars\nup", "sim: t:3: down: unknown region \"mars\" (regions: us-east, eu-west, sa-east)\nsim: t:4: up takes one region, got 0 arguments"},
	}
	for _, tt := range tests {
		_, err := ParseScript("t", strings.NewReader(tt.script), testRegions)
		if err == nil || err.Error() != tt.want {
			t.Errorf("script %q: error %v, want %q", tt.script, err, tt.want)
		}
	}
	long := strings.Repeat("heal\n", maxSteps+1)
	if _, err := ParseScript("t", strings.NewReader(long), testRegions); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d steps", maxSteps)) {
		t.Errorf("a script too long: %v", err)
	}
}

// TestScenarios parses every named scenario and the scripts in testdata.
func TestScenarios(t *testing.T) {
	regions := dev.DefaultConfig().Regions
	for _, name := range Scenarios() {
		sc, err := Scenario(name, regions)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var faults, waits int
		for _, st := range sc.Steps {
			if st.fault() {
				faults++
			}
			if st.Kind == StepWait {
				waits++
			}
			if st.Kind == StepGrow { // the growth is the story's fault, and it waits for the rebalance
				faults, waits = faults+1, waits+1
			}
		}
		if faults == 0 || waits < 2 {
			t.Errorf("%s: %d faults and %d waits; a scenario injects a fault and waits for detection and recovery", name, faults, waits)
		}
	}
	if _, err := Scenario("stampede", regions); err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Errorf("an unknown scenario: %v", err)
	}
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata scripts: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseScript(f, strings.NewReader(string(b)), regions); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
