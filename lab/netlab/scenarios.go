package netlab

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/lab/sim"
)

// scripts holds the real-process scenarios, one file each: testdata/<name>.txt.
//
//go:embed testdata/*.txt
var scripts embed.FS

// Scenarios lists the names of the real-process scenarios.
func Scenarios() []string {
	entries, _ := fs.ReadDir(scripts, "testdata")
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".txt"); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Scenario returns the named real-process scenario for these regions.
func Scenario(name string, regions []string) (sim.Script, error) {
	f, err := scripts.Open("testdata/" + name + ".txt")
	if err != nil {
		return sim.Script{}, fmt.Errorf("netlab: unknown scenario %q (scenarios: %s)", name, strings.Join(Scenarios(), ", "))
	}
	defer f.Close()
	return sim.ParseScript(name, f, regions)
}
