package chartcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsWalkthrough runs the ```console blocks of docs/deploy/kubernetes.md: each "$ "
// line in one temporary directory, with the vigil of this repository first in PATH; the
// lines after a command are its whole expected output. Commands that need a cluster (helm,
// kubectl) stay in ```sh blocks, which this test does not run.
func TestDocsWalkthrough(t *testing.T) {
	src, err := os.ReadFile("../../../docs/deploy/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	bin := vigilBinary(t)
	dir := t.TempDir()
	steps := consoleSteps(string(src))
	if len(steps) == 0 {
		t.Fatal("docs/deploy/kubernetes.md: no console block")
	}
	for _, s := range steps {
		cmd := exec.Command("bash", "-c", s.cmd)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "LC_ALL=C")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("$ %s: %v\n%s", s.cmd, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != s.want {
			t.Errorf("$ %s\nprinted\n%s\nthe doc says\n%s", s.cmd, got, s.want)
		}
	}
}

type step struct{ cmd, want string }

// consoleSteps returns the commands of the ```console blocks with the output shown after each.
func consoleSteps(md string) []step {
	var steps []step
	in := false
	for line := range strings.Lines(md) {
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "```console":
			in = true
		case in && line == "```":
			in = false
		case in && strings.HasPrefix(line, "$ "):
			steps = append(steps, step{cmd: strings.TrimPrefix(line, "$ ")})
		case in && len(steps) > 0:
			last := &steps[len(steps)-1]
			last.want = strings.TrimSpace(last.want + "\n" + line)
		}
	}
	return steps
}
