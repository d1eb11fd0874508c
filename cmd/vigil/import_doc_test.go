package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docStep is one command of a walkthrough in docs/ and what it prints.
type docStep struct {
	line int // of the command in the document
	cmd  string
	want []string
}

// docSteps returns the commands of every ```console block of the document at path: each
// "$ " line a command, the lines after it (up to the next command or the end of the block)
// what it prints, standard output and standard error together.
func docSteps(t *testing.T, path string) []docStep {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []docStep
	block := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "```console":
			block = true
		case block && line == "```":
			block = false
		case block && strings.HasPrefix(line, "$ "):
			steps = append(steps, docStep{line: n, cmd: strings.TrimPrefix(line, "$ ")})
		case block && len(steps) > 0:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		case block:
			t.Fatalf("%s:%d: a console block starts with output, not a $ command", path, n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return steps
}

// docOutputMatches reports whether got is what want says, line by line; a wanted line
// ending in "..." matches any line that starts with what precedes it.
func docOutputMatches(got string, want []string) bool {
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if got == "" {
		lines = nil
	}
	if len(lines) != len(want) {
		return false
	}
	for i, w := range want {
		if p, ok := strings.CutSuffix(w, "..."); ok {
			if !strings.HasPrefix(lines[i], p) {
				return false
			}
		} else if strings.TrimRight(lines[i], " ") != w {
			return false
		}
	}
	return true
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
		for _, bin := range strings.Fields(s.cmd) {
			if bin == "nsd-checkzone" && tool(bin) == "" {
				t.Skip("nsd-checkzone is not installed (Debian: nsd; .ci/run installs it)")
			}
		}
	}
	bin := buildVigil(t)
	work := t.TempDir()
	path := filepath.Dir(bin) + string(os.PathListSeparator) + "/usr/sbin" + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, s := range steps {
		if m := catFile.FindStringSubmatch(s.cmd); m != nil {
			file := filepath.Join(work, m[1])
			if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
				if err := os.WriteFile(file, []byte(strings.Join(s.want, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "sh", "-c", s.cmd)
		cmd.Dir, cmd.Env = work, append(os.Environ(), "PATH="+path)
		out, _ := cmd.CombinedOutput()
		cancel()
		if !docOutputMatches(string(out), s.want) {
			t.Errorf("%s:%d: $ %s\nprinted:\n%s\nthe document shows:\n%s", doc, s.line, s.cmd, out, strings.Join(s.want, "\n"))
		}
	}
}

// TestDocOutputMatches pins how a walkthrough's output is compared.
func TestDocOutputMatches(t *testing.T) {
	for _, c := range []struct {
		got  string
		want []string
		ok   bool
	}{
		{"a\nb\n", []string{"a", "b"}, true},
		{"a\nb\n", []string{"a"}, false},
		{"a\n", []string{"a", "b"}, false},
		{"a 12ms\n", []string{"a ..."}, true},
		{"b 12ms\n", []string{"a ..."}, false},
		{"", nil, true},
		{"x\n", nil, false},
	} {
		if got := docOutputMatches(c.got, c.want); got != c.ok {
			t.Errorf("docOutputMatches(%q, %q) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
}
