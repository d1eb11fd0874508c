package dev

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/internal/doctest"
)

// walkthrough names a part of the documentation whose ```console blocks a test runs as
// written: a file (from the repository root) and the heading of its section ("" for the
// whole file), and the test that runs it ("TestX", or "pkg.TestX" for a test of another
// package). Every console block of README.md and docs/ must fall under one of them
// (TestDocsWalkthroughsClaimed).
type walkthrough struct {
	file, heading, test string
}

// walkthroughs is the registry of the documentation's tested walkthroughs.
var walkthroughs = []walkthrough{
	{"README.md", "Five-minute tour", "TestReadme"},
	{"docs/config.md", "Checking a file", "TestReadme"},
	{"docs/operations.md", "Try it on the dev network", "TestReadme"},
	{"docs/dnssec.md", "Try it on the dev network", "TestReadme"},
	{"docs/operator-guide.md", "A first network on one machine", "TestReadme"},
	{"docs/demo.md", "The compose demo", "TestComposeWalkthrough"},
	{"docs/import.md", "", "cmd/vigil.TestImportDoc"},
	{"docs/transfers.md", "", "cmd/vigil.TestTransfersDoc"},
	{"docs/deploy/kubernetes.md", "", "deploy/helm/chartcheck.TestDocsWalkthrough"},
	{"docs/walkthroughs/three-regions.md", "", "lab/netlab.TestWalkthroughThreeRegions"},
}

// readmeStep is one command of a walkthrough and what it prints.
type readmeStep struct {
	cmd  string
	want []string
}

// mdBlock is a fenced block of a Markdown file: its language, its lines and the headings it
// sits under, outermost first.
type mdBlock struct {
	lang     string
	lines    []string
	headings []string
}

// markdownBlocks returns the fenced blocks of a Markdown text with the headings above each.
func markdownBlocks(text string) []mdBlock {
	var (
		blocks []mdBlock
		stack  []string // stack[i] is the heading of level i+1 in force
		cur    *mdBlock
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur != nil && strings.HasPrefix(line, "```") && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case strings.HasPrefix(line, "```"):
			var hs []string
			for _, h := range stack {
				if h != "" {
					hs = append(hs, h)
				}
			}
			cur = &mdBlock{lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), headings: hs}
		case strings.HasPrefix(line, "#"):
			level := len(line) - len(strings.TrimLeft(line, "#"))
			if level > 6 || !strings.HasPrefix(line[level:], " ") {
				continue
			}
			for len(stack) < level {
				stack = append(stack, "")
			}
			stack = append(stack[:level-1], strings.TrimSpace(line[level:]))
		}
	}
	return blocks
}

// isWalkthrough reports whether a block is a walkthrough: a console block with a command.
func (b mdBlock) isWalkthrough() bool {
	if b.lang != "console" {
		return false
	}
	for _, l := range b.lines {
		if strings.HasPrefix(l, "$ ") {
			return true
		}
	}
	return false
}

// under reports whether the block sits in the section whose heading starts with heading
// ("" for any).
func (b mdBlock) under(heading string) bool {
	if heading == "" {
		return true
	}
	for _, h := range b.headings {
		if strings.HasPrefix(h, heading) {
			return true
		}
	}
	return false
}

// walkthroughSteps returns the commands of the console blocks of the section of file (from
// the repository root) whose heading starts with heading: each "$ " line is a command, the
// lines after it (up to the next command or the end of the block) what it prints. The
// calling test must be the one the registry names for that section.
func walkthroughSteps(t *testing.T, file, heading string) []readmeStep {
	t.Helper()
	registered := false
	for _, w := range walkthroughs {
		if w.file == file && w.heading == heading && w.test == strings.Split(t.Name(), "/")[0] {
			registered = true
		}
	}
	if !registered {
		t.Fatalf("%s, section %q: not in the walkthroughs registry (lab/dev/walkthrough_test.go) for %s", file, heading, t.Name())
	}
	b, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		t.Fatal(err)
	}
	var steps []readmeStep
	for _, blk := range markdownBlocks(string(b)) {
		if !blk.isWalkthrough() || !blk.under(heading) {
			continue
		}
		got, err := doctest.Steps("```console\n" + strings.Join(blk.lines, "\n") + "\n```\n")
		if err != nil {
			t.Fatalf("%s, section %q: %v", file, heading, err)
		}
		for _, s := range got {
			steps = append(steps, readmeStep{cmd: s.Cmd, want: s.Want})
		}
	}
	if len(steps) == 0 {
		t.Fatalf("%s: no console block under a heading %q", file, heading)
	}
	return steps
}

// docFiles returns README.md and every Markdown file under docs/, from the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir("../../docs", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel("../..", p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDocsWalkthroughsClaimed fails for a walkthrough of README.md or docs/ (a ```console
// block with a "$ " command) that no test runs, for a registry entry whose section holds
// none, and for an entry whose test does not exist.
func TestDocsWalkthroughsClaimed(t *testing.T) {
	used := make([]bool, len(walkthroughs))
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, blk := range markdownBlocks(string(b)) {
			if !blk.isWalkthrough() {
				continue
			}
			claimed := false
			for i, w := range walkthroughs {
				if w.file == f && blk.under(w.heading) {
					claimed, used[i] = true, true
				}
			}
			if !claimed {
				t.Errorf("%s: the walkthrough under %q (%s) is run by no test: run it from a test and add it to the walkthroughs registry (lab/dev/walkthrough_test.go), or make it a ```text block if it is not meant to run", f, strings.Join(blk.headings, " > "), firstCommand(blk))
			}
		}
	}
	for i, w := range walkthroughs {
		if !used[i] {
			t.Errorf("registry: %s, section %q, holds no walkthrough", w.file, w.heading)
		}
		if !testExists(t, w.test) {
			t.Errorf("registry: %s, section %q, names %s, which is not a test of the repository", w.file, w.heading, w.test)
		}
	}
}

func firstCommand(b mdBlock) string {
	for _, l := range b.lines {
		if strings.HasPrefix(l, "$ ") {
			return l
		}
	}
	return ""
}

// testExists reports whether "TestX" (in this package) or "pkg/path.TestX" is declared in a
// _test.go file.
func testExists(t *testing.T, name string) bool {
	t.Helper()
	dir, fn := ".", name
	if i := strings.LastIndex(name, "."); i >= 0 {
		dir, fn = filepath.Join("../..", name[:i]), name[i+1:]
	}
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nfunc "+fn+"(t *testing.T)") {
			return true
		}
	}
	return false
}

// TestMarkdownBlocks pins how blocks are placed under headings.
func TestMarkdownBlocks(t *testing.T) {
	text := "# A\n```console\n$ a\n```\n## B\n```console\n$ b\nout\n```\n### C\n```text\nc\n```\n## D\n```console\n$ d\n```\n# E\n```sh\ne\n```\n"
	blocks := markdownBlocks(text)
	want := []struct {
		lang, headings string
		walk           bool
	}{{"console", "A", true}, {"console", "A>B", true}, {"text", "A>B>C", false}, {"console", "A>D", true}, {"sh", "E", false}}
	if len(blocks) != len(want) {
		t.Fatalf("%d blocks, want %d: %+v", len(blocks), len(want), blocks)
	}
	for i, w := range want {
		b := blocks[i]
		if b.lang != w.lang || strings.Join(b.headings, ">") != w.headings || b.isWalkthrough() != w.walk {
			t.Errorf("block %d: %s under %q walkthrough %v; want %s under %q %v", i, b.lang, strings.Join(b.headings, ">"), b.isWalkthrough(), w.lang, w.headings, w.walk)
		}
	}
	if !blocks[1].under("B") || blocks[3].under("B") || !blocks[3].under("") {
		t.Errorf("under: section B must hold the second block and not the fourth")
	}
}
