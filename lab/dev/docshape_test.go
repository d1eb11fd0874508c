package dev

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestDocsReadmeShape holds README.md to what it is for: what Vigil is and why, the picture of
// the data flow (TestDataFlowPicture keeps it the same as docs/), the two set-up commands,
// the five-minute tour (TestReadme runs it) and the links to docs/, in at most 300 lines; the
// manual lives in docs/.
func TestDocsReadmeShape(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n > 300 {
		t.Errorf("README.md has %d lines; at most 300: the manual belongs in docs/", n)
	}
	body := map[string]string{}
	cur := ""
	for l := range strings.Lines(text) {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			cur = strings.TrimSpace(h)
			continue
		}
		body[cur] += l
	}
	find := func(prefix string) (string, bool) {
		for h, s := range body {
			if strings.HasPrefix(h, prefix) {
				return s, true
			}
		}
		return "", false
	}
	for _, want := range []string{"Why", "How it works", "Set up", "Five-minute tour", "Documentation"} {
		if _, ok := find(want); !ok {
			t.Errorf("README.md has no section %q (## %s...)", want, want)
		}
	}
	if s, ok := find("Set up"); ok {
		cmds := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(s)
		if cmds == nil {
			t.Errorf("README.md, Set up: no ```sh block of the set-up commands")
		} else if lines := strings.Split(strings.TrimSpace(cmds[1]), "\n"); len(lines) != 2 ||
			!strings.HasPrefix(lines[0], "make run") || !strings.HasPrefix(lines[1], "make test") {
			t.Errorf("README.md, Set up: want the two commands make run and make test, got %q", lines)
		}
	}
	if s, ok := find("Documentation"); ok {
		for _, link := range []string{"(docs/README.md)", "(docs/operator-guide.md)", "(docs/walkthroughs/three-regions.md)",
			"(docs/config.md)", "(docs/cli.md)", "(docs/api.md)", "(docs/architecture.md)", "(BENCHMARKS.md)"} {
			if !strings.Contains(s, link) {
				t.Errorf("README.md, Documentation: no link %s", link)
			}
		}
	}
}

// TestDocsBenchmarksHeadline holds BENCHMARKS.md to opening with one table of headline
// figures beside their peers, before the measurement log: each row names what was measured,
// Vigil's figure, the peer's, the commit, the command (in backquotes) and a section of the
// log that exists.
func TestDocsBenchmarksHeadline(t *testing.T) {
	b, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	first := regexp.MustCompile(`(?m)^## .*$`).FindString(text)
	if !strings.HasPrefix(first, "## Headline figures") {
		t.Fatalf("BENCHMARKS.md's first section is %q, want the headline figures", first)
	}
	head, log, ok := strings.Cut(text[strings.Index(text, first):], "\n## The measurement log")
	if !ok {
		t.Fatalf("BENCHMARKS.md: no \"## The measurement log\" after the headline figures")
	}
	var headings []string
	for _, m := range regexp.MustCompile(`(?m)^#{2,3} (.*)$`).FindAllStringSubmatch(log, -1) {
		headings = append(headings, m[1])
	}
	hasSection := func(name string) bool {
		for _, h := range headings {
			if strings.HasPrefix(h, name) {
				return true
			}
		}
		return false
	}
	var header []string
	rows := 0
	hash := regexp.MustCompile(`^[0-9a-f]{7,40}$`)
	for l := range strings.Lines(head) {
		if !strings.HasPrefix(l, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(strings.ReplaceAll(l, `\|`, "\x00")), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case header == nil:
			header = cells
			if strings.Join(cells, ",") != "what,Vigil,peer,commit,command,log section" {
				t.Fatalf("headline table's columns %q, want what, Vigil, peer, commit, command, log section", cells)
			}
			continue
		case strings.HasPrefix(cells[0], "---"):
			continue
		}
		rows++
		if len(cells) != len(header) {
			t.Errorf("headline row %d has %d cells, want %d: %s", rows, len(cells), len(header), l)
			continue
		}
		if cells[1] == "" {
			t.Errorf("headline row %q: no figure of Vigil", cells[0])
		}
		for c := range strings.SplitSeq(cells[3], ", ") {
			if !hash.MatchString(c) {
				t.Errorf("headline row %q: commit %q is not a commit", cells[0], c)
			} else if !commitKnown(t, c) {
				t.Errorf("headline row %q: commit %s is not in this repository's history", cells[0], c)
			}
		}
		if !strings.HasPrefix(cells[4], "`") {
			t.Errorf("headline row %q: no command", cells[0])
		}
		if !hasSection(cells[5]) {
			t.Errorf("headline row %q: the log has no section %q", cells[0], cells[5])
		}
	}
	if rows < 5 {
		t.Errorf("headline table: %d rows, want the headline figures", rows)
	}
}

// commitKnown reports whether git knows the commit, or true when it cannot tell (no git, no
// repository, a shallow clone).
func commitKnown(t *testing.T, commit string) bool {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--is-shallow-repository").Output()
	if err != nil || strings.TrimSpace(string(out)) != "false" {
		return true
	}
	return exec.Command("git", "cat-file", "-e", commit+"^{commit}").Run() == nil
}

// TestDocsManualShape holds docs/ to the manual the README points to: an index, the
// operator's guide with its parts (three regions, securing, upgrading, backing up and
// restoring the control plane, what to watch), the references (configuration, CLI, API:
// generated and held to the code by TestConfigReference, TestCLIReference and
// TestAPIReference), DNS data and DNSSEC, and the architecture.
func TestDocsManualShape(t *testing.T) {
	for _, f := range []string{"README.md", "operator-guide.md", "config.md", "cli.md", "api.md", "dns.md", "dnssec.md",
		"architecture.md", "walkthroughs/three-regions.md"} {
		if _, err := os.Stat("../../docs/" + f); err != nil {
			t.Errorf("docs/%s: %v", f, err)
		}
	}
	guide, err := os.ReadFile("../../docs/operator-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Deploying three regions", "Securing it", "Upgrading", "Backing up and restoring the control plane",
		"What to watch", "One client configuration"} {
		if !regexp.MustCompile(`(?m)^## ` + regexp.QuoteMeta(h) + `\b`).Match(guide) {
			t.Errorf("docs/operator-guide.md has no section %q", h)
		}
	}
}
