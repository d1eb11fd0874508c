package vigil_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the repository's module path.
const module = "github.com/vigil-dns/vigil"

// goPackage is what `go list -json` says of one package that the layout rules read.
type goPackage struct {
	ImportPath string
	Imports    []string
}

// listPackages returns every package of the module as `go list` sees it.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(out)
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	return pkgs
}

// area is the part of the tree a package sits in: "lab" (proof tooling), "tests", "cmd",
// "internal" or "product".
func area(path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	for _, a := range []string{"lab", "tests", "cmd", "internal"} {
		if rel == a || strings.HasPrefix(rel, a+"/") {
			return a
		}
	}
	return "product"
}

// TestLayout fails when the product reaches into the proof tooling: no package outside lab/,
// tests/ and cmd/ links lab/ or tests/ (its tests may use lab/'s harnesses), and internal/
// imports only internal/ and config/, so that its libraries stay leaves.
func TestLayout(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		from := area(p.ImportPath)
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := area(imp)
			switch {
			case (to == "lab" || to == "tests") && from != "lab" && from != "tests" && from != "cmd":
				t.Errorf("%s imports %s: the product must not depend on the proof tooling", p.ImportPath, imp)
			case from == "internal" && to != "internal" && imp != module+"/config":
				t.Errorf("%s imports %s: internal/ holds leaves that import only internal/ and config/", p.ImportPath, imp)
			}
		}
	}
}

// raftLinkers are the only packages of the product that may link raft and its stores: the
// control plane's runtime, the agent that runs voters, and the binary. Every other product
// package (control/client, control/state, status, externaldns...) reads the control plane
// without them, so that its readers stay small and raft's stores stay the voters' concern.
var raftLinkers = []string{"control", "agent", "cmd/vigil"}

// raftModules are the modules that the rest of the product must not link.
var raftModules = []string{"github.com/hashicorp/raft", "github.com/hashicorp/raft-boltdb", "github.com/hashicorp/raft-wal", "go.etcd.io/bbolt"}

// TestReadersLinkNoRaft fails when a product package outside raftLinkers links raft,
// raft-boltdb, raft-wal or bbolt, directly or through any package it imports, and names the
// chain of imports.
func TestReadersLinkNoRaft(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
	}
	checked := 0
	for pkg := range imports {
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok || area(pkg) != "product" && area(pkg) != "internal" || slices.Contains(raftLinkers, rel) {
			continue
		}
		checked++
		if chain := importChain(imports, pkg, isRaft); chain != nil {
			t.Errorf("%s links %s: %s", rel, chain[len(chain)-1], strings.Join(chain, " → "))
		}
	}
	if _, ok := imports[module+"/control/client"]; checked < 20 || !ok {
		t.Fatalf("checked %d packages; control/client among them: want it and 20 or more", checked)
	}
}

// isRaft reports whether an import path is in one of raftModules.
func isRaft(path string) bool {
	for _, m := range raftModules {
		if path == m || strings.HasPrefix(path, m+"/") {
			return true
		}
	}
	return false
}

// importChain returns a shortest chain of imports from a package to one that match holds,
// module-relative; nil when none is reached.
func importChain(imports map[string][]string, from string, match func(string) bool) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if match(p) {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{strings.TrimPrefix(p, module+"/")}, chain...)
			}
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// layers ranks the product's packages from the leaves up, in the direction of the data flow
// (values and rules at the bottom, the roles that use them above, the agent that wires them on
// top). A package may import only packages of lower layers, and internal/ is below them all,
// so an arrow that points up (a rule reaching into the server that applies it, the state into
// its API) fails TestImportsFollowLayers, and a new package must be given its layer here.
var layers = [][]string{
	{"config/rdata", "dnssec", "api", "regions", "examples", "deploy/debian", "location/history", "location/nsdtest", "location/delvtest"},
	{"config", "location/unboundtest"},
	{"config/zonefile", "checker/shard", "quorum", "location/routing"},
	{"checker", "control/state"},
	{"gossip", "control", "control/client", "location"},
	{"location/verdict", "externaldns", "status"},
	{"status/notify", "status/verify"},
	{"agent"},
}

// TestImportsFollowLayers fails when a product package imports one of its own layer or above,
// or is missing from layers.
func TestImportsFollowLayers(t *testing.T) {
	rank := map[string]int{}
	for i, layer := range layers {
		for _, p := range layer {
			rank[module+"/"+p] = i
		}
	}
	rankOf := func(path string) (int, bool) {
		if area(path) == "internal" {
			return -1, true
		}
		r, ok := rank[path]
		return r, ok
	}
	for _, p := range listPackages(t) {
		if area(p.ImportPath) != "product" || p.ImportPath == module {
			continue
		}
		from, ok := rankOf(p.ImportPath)
		if !ok {
			t.Errorf("%s has no layer: add it to layers in layout_test.go, above every package it imports", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if to, ok := rankOf(imp); ok && to >= from {
				t.Errorf("%s (layer %d) imports %s (layer %d): an import must point to a lower layer", p.ImportPath, from, imp, to)
			}
		}
	}
}
