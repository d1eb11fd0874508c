package dev

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// readmeStep is one command of a README walkthrough and what it prints.
type readmeStep struct {
	cmd  string
	want []string
}

// readmeSteps returns the commands of the ```console blocks of the README section whose
// heading starts with heading: each "$ " line is a command, the lines after it (up to the
// next command or the end of the block) what it prints.
func readmeSteps(t *testing.T, heading string) []readmeStep {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var (
		steps            []readmeStep
		inSection, block bool
	)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inSection = strings.HasPrefix(line, "## "+heading)
		case !inSection:
		case line == "```console":
			block = true
		case block && line == "```":
			block = false
		case block && strings.HasPrefix(line, "$ "):
			steps = append(steps, readmeStep{cmd: strings.TrimPrefix(line, "$ ")})
		case block && len(steps) > 0:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	if len(steps) == 0 {
		t.Fatalf("README.md: no console block under a heading %q", heading)
	}
	return steps
}

// matchOutput reports whether got (a command's output) is what want says: line by line,
// a wanted line ending in "..." matches any line that starts with what precedes it, and a
// last wanted line "..." matches any further lines.
func matchOutput(got string, want []string) bool {
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if got == "" {
		lines = nil
	}
	for i, w := range want {
		if w == "..." && i == len(want)-1 {
			return true
		}
		if i >= len(lines) {
			return false
		}
		l := strings.TrimRight(lines[i], " ")
		if p, ok := strings.CutSuffix(w, "..."); ok {
			if !strings.HasPrefix(lines[i], p) {
				return false
			}
		} else if l != w {
			return false
		}
	}
	return len(lines) == len(want)
}

// runSteps runs each step in dir with sh, its command rewritten by subst, until it prints
// what the README says, asking again for up to within: answers change a few seconds after
// a fault.
func runSteps(t *testing.T, dir string, env []string, steps []readmeStep, subst *strings.Replacer, within time.Duration) {
	t.Helper()
	for _, s := range steps {
		cmdline := subst.Replace(s.cmd)
		start := time.Now()
		var out string
		for try := 0; ; try++ {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
			b, _ := cmd.CombinedOutput()
			cancel()
			out = string(b)
			if matchOutput(out, s.want) {
				t.Logf("$ %s  (%v, %d tries)", s.cmd, time.Since(start).Round(100*time.Millisecond), try+1)
				break
			}
			if time.Since(start) > within || t.Context().Err() != nil {
				t.Fatalf("$ %s\n(run as %s) printed, after %v:\n%s\nREADME.md says:\n%s", s.cmd, cmdline,
					time.Since(start).Round(time.Second), out, strings.Join(s.want, "\n"))
			}
			time.Sleep(time.Second)
		}
	}
}

// TestMatchOutput pins the README's convention for expected output.
func TestMatchOutput(t *testing.T) {
	for _, c := range []struct {
		got  string
		want []string
		ok   bool
	}{
		{"a\nb\n", []string{"a", "b"}, true},
		{"a\nb\n", []string{"a"}, false},
		{"a\n", []string{"a", "b"}, false},
		{"a\nb\nc\n", []string{"a", "..."}, true},
		{"web  healthy  3s ago\n", []string{"web  healthy  ..."}, true},
		{"web  unhealthy  3s ago\n", []string{"web  healthy  ..."}, false},
		{"", nil, true},
		{"x\n", nil, false},
	} {
		if got := matchOutput(c.got, c.want); got != c.ok {
			t.Errorf("matchOutput(%q, %q) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
}
