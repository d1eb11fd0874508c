// Package doctest reads the documentation's ```console walkthroughs: each command and the
// output it is shown to print, and whether what a command printed matches. The tests that run
// README.md's and docs/'s walkthroughs share it, so that every walkthrough follows one
// convention.
package doctest

import (
	"fmt"
	"strings"
)

// Step is one command of a walkthrough and what it prints.
type Step struct {
	Line int      // the line of the document the command starts on
	Cmd  string   // the command, continuation lines joined
	Want []string // the lines it prints
}

// Steps returns the commands of a document's ```console blocks: a line "$ CMD" is a
// command (a line ending in a backslash continues on the next one), the lines after it up to
// the next command or the end of the block are what it prints.
func Steps(doc string) ([]Step, error) {
	var (
		steps        []Step
		block, contd bool
	)
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case !block && line == "```console":
			block = true
		case !block:
		case line == "```":
			if contd {
				return nil, fmt.Errorf("line %d: the block ends inside a command", i+1)
			}
			block = false
		case contd:
			s := &steps[len(steps)-1]
			l, more := strings.CutSuffix(line, "\\")
			s.Cmd += " " + strings.TrimSpace(l)
			contd = more
		case strings.HasPrefix(line, "$ "):
			l, more := strings.CutSuffix(strings.TrimPrefix(line, "$ "), "\\")
			steps = append(steps, Step{Line: i + 1, Cmd: strings.TrimSpace(l)})
			contd = more
		case len(steps) == 0:
			return nil, fmt.Errorf("line %d: output before the first command of a block", i+1)
		default:
			s := &steps[len(steps)-1]
			s.Want = append(s.Want, line)
		}
	}
	if block {
		return nil, fmt.Errorf("a ```console block is not closed")
	}
	return steps, nil
}

// Match reports whether got (a command's output) is what want says, line by line: "..."
// in a wanted line matches any text in the line, and a wanted line that is only "..." matches
// any number of lines, none included. Trailing spaces of got's lines do not count.
func Match(got string, want []string) bool {
	got = strings.TrimRight(got, "\n")
	var lines []string
	if got != "" {
		lines = strings.Split(got, "\n")
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return matchLines(lines, want)
}

func matchLines(lines, want []string) bool {
	if len(want) == 0 {
		return len(lines) == 0
	}
	if want[0] == "..." {
		for skip := 0; skip <= len(lines); skip++ {
			if matchLines(lines[skip:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(lines) > 0 && matchLine(lines[0], want[0]) && matchLines(lines[1:], want[1:])
}

// matchLine matches one line against a wanted line whose "..." match any text.
func matchLine(line, want string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return line == want
	}
	rest, ok := strings.CutPrefix(line, parts[0])
	if !ok {
		return false
	}
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return len(rest) >= len(last) && strings.HasSuffix(rest, last)
}
