package dev

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// anchors returns the anchors GitHub gives the headings of a Markdown text: lower case,
// without punctuation but '-' and '_', spaces as '-', a repeated one with -1, -2, ...
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if inCode || level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(line[level:])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	repoPath = regexp.MustCompile("`([a-z][a-z0-9_./-]*/[a-z0-9_.-]+\\.(?:go|yaml|yml|md|sh|txt|json))`")
)

// TestDocsLinks fails for a relative link of README.md or docs/ that leads nowhere: a file
// that is not in the repository, or an anchor that no heading of its file makes; and for a
// repository file named in backquotes (`deploy/compose/fault.sh`) that does not exist.
func TestDocsLinks(t *testing.T) {
	texts := map[string]string{}
	read := func(f string) (string, error) {
		if s, ok := texts[f]; ok {
			return s, nil
		}
		b, err := os.ReadFile(filepath.Join("../..", f))
		texts[f] = string(b)
		return string(b), err
	}
	for _, f := range docFiles(t) {
		text, err := read(f)
		if err != nil {
			t.Fatal(err)
		}
		// Code blocks hold commands and output, not links.
		var prose strings.Builder
		inCode := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "```") {
				inCode = !inCode
				continue
			}
			if !inCode {
				prose.WriteString(line + "\n")
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(prose.String(), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f), path)))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s: the link %s leaves the repository", f, target)
					continue
				}
				if _, err := os.Stat(filepath.Join("../..", dest)); err != nil {
					t.Errorf("%s: the link %s leads to %s, which is not in the repository", f, target, dest)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			destText, err := read(dest)
			if err != nil {
				t.Errorf("%s: the link %s: %v", f, target, err)
				continue
			}
			if !anchors(destText)[anchor] {
				t.Errorf("%s: the link %s names #%s, which no heading of %s makes", f, target, anchor, dest)
			}
		}
		for _, m := range repoPath.FindAllStringSubmatch(prose.String(), -1) {
			p := m[1]
			if strings.HasPrefix(p, "build/") || strings.HasPrefix(p, "bin/") {
				continue // made by make
			}
			if _, err := os.Stat(filepath.Join("../..", p)); err != nil {
				t.Errorf("%s names %s, which is not in the repository", f, p)
			}
		}
	}
}

// TestAnchors pins GitHub's anchors for the headings the docs link to.
func TestAnchors(t *testing.T) {
	a := anchors("# Vigil\n## Notifications: `notifications:`\n## When no record is healthy: `no_healthy`\n```\n# not a heading\n```\n## Vigil\n## São Paulo cut off\n")
	for _, want := range []string{"vigil", "notifications-notifications", "when-no-record-is-healthy-no_healthy", "vigil-1", "são-paulo-cut-off"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Errorf("a line in a code block made an anchor")
	}
}

// TestDocsAlerts fails when an alert of deploy/prometheus/rules.yml is not in the operator's
// guide's list of what to watch, or the list names one that is gone.
func TestDocsAlerts(t *testing.T) {
	rules, err := os.ReadFile("../../deploy/prometheus/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile("../../docs/operator-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\S+)`).FindAllStringSubmatch(string(rules), -1) {
		alerts[m[1]] = true
		if !strings.Contains(string(guide), "| `"+m[1]+"` |") {
			t.Errorf("docs/operator-guide.md, What to watch: no row for the alert %s of deploy/prometheus/rules.yml", m[1])
		}
	}
	if len(alerts) == 0 {
		t.Fatal("deploy/prometheus/rules.yml: no alert found")
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `(Vigil[A-Za-z]+)` \\|").FindAllStringSubmatch(string(guide), -1) {
		if !alerts[m[1]] {
			t.Errorf("docs/operator-guide.md lists the alert %s, which deploy/prometheus/rules.yml does not define", m[1])
		}
	}
}

// TestDataFlowPicture keeps the picture of the data flow the same in README.md,
// docs/architecture.md and docs/dataflow.txt.
func TestDataFlowPicture(t *testing.T) {
	pic, err := os.ReadFile("../../docs/dataflow.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(pic), "\n\n")
	if !ok || !strings.Contains(body, "quorum") {
		t.Fatalf("docs/dataflow.txt: no picture after its title line")
	}
	for _, f := range []string{"README.md", "docs/architecture.md"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "```\n"+body+"```\n") {
			t.Errorf("%s does not show the picture of docs/dataflow.txt (as a ``` block)", f)
		}
	}
}
