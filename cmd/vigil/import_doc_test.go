package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/doctest"
)

// docSteps returns the commands of every ```console block of the document at path, read by
// the convention every walkthrough follows (internal/doctest).
func docSteps(t *testing.T, path string) []doctest.Step {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := doctest.Steps(string(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(steps) == 0 {
		t.Fatalf("%s: no console block", path)
	}
	return steps
}

// catFile matches a step that shows a file: "cat NAME".
var catFile = regexp.MustCompile(`^cat ([A-Za-z0-9._-]+)$`)

// TestImportDoc runs the walkthrough of docs/import.md as written: each command in a shell,
// in a directory of its own, with the vigil built from this tree first in PATH, and checks
// that it prints what the document shows. A step "cat FILE" whose file does not exist yet
// writes it from the lines the document shows, so that the document's example files are
// the files the commands read; a file that a command made is checked by it instead.
func TestImportDoc(t *testing.T) {
	const doc = "../../docs/import.md"
	steps := docSteps(t, doc)
	if len(steps) < 6 {
		t.Fatalf("%s: %d commands in its console blocks; the walkthrough is missing", doc, len(steps))
	}
	for _, s := range steps {
		for _, bin := range strings.Fields(s.Cmd) {
			if bin == "nsd-checkzone" && tool(bin) == "" {
				t.Skip("nsd-checkzone is not installed (Debian: nsd; .ci/run installs it)")
			}
		}
	}
	bin := buildVigil(t)
	work := t.TempDir()
	path := filepath.Dir(bin) + string(os.PathListSeparator) + "/usr/sbin" + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, s := range steps {
		if m := catFile.FindStringSubmatch(s.Cmd); m != nil {
			file := filepath.Join(work, m[1])
			if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
				if err := os.WriteFile(file, []byte(strings.Join(s.Want, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "sh", "-c", s.Cmd)
		cmd.Dir, cmd.Env = work, append(os.Environ(), "PATH="+path)
		out, _ := cmd.CombinedOutput()
		cancel()
		if !doctest.Match(string(out), s.Want) {
			t.Errorf("%s:%d: $ %s\nprinted:\n%s\nthe document shows:\n%s", doc, s.Line, s.Cmd, out, strings.Join(s.Want, "\n"))
		}
	}
}
