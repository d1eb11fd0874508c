package vigil_test

import (
	"encoding/json"
	"io"
	"os/exec"
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
