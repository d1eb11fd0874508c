// Package vigil_test holds repository-wide checks: every package says what it owns, in a
// first sentence short enough to read at a glance.
package vigil_test

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxSynopsisWords bounds the first sentence of a package doc comment, what `go doc` and
// pkg.go.dev list: the rest of the comment says the details.
const maxSynopsisWords = 25

// TestPackageDocs fails for any package without a doc comment on one of its files, and for a
// package doc comment whose first sentence is over maxSynopsisWords words.
func TestPackageDocs(t *testing.T) {
	dirs := map[string]bool{}
	for _, path := range sourceFiles(t) {
		text := docText(t, path)
		dirs[filepath.Dir(path)] = dirs[filepath.Dir(path)] || text != ""
		if n := len(strings.Fields(synopsis(text))); n > maxSynopsisWords {
			t.Errorf("%s: the package doc's first sentence has %d words, over %d: %q", path, n, maxSynopsisWords, synopsis(text))
		}
	}
	if len(dirs) == 0 {
		t.Fatal("found no packages")
	}
	for dir, ok := range dirs {
		if !ok {
			t.Errorf("package in %s has no package doc comment", dir)
		}
	}
}

// sourceFiles returns the repository's non-test Go files, outside hidden folders and testdata.
func sourceFiles(t *testing.T) []string {
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// synopsis returns the first sentence of a package doc comment, as go/doc finds it.
func synopsis(text string) string { return new(doc.Package).Synopsis(text) }

// TestSynopsisWords: the word count the package docs are held to is that of go/doc's first
// sentence, which ends at the first period followed by a space.
func TestSynopsisWords(t *testing.T) {
	long := "Package x does " + strings.Repeat("one thing ", 11) + "well. Then the details."
	if n := len(strings.Fields(synopsis(long))); n != maxSynopsisWords+1 {
		t.Fatalf("synopsis of %q has %d words, want %d", long, n, maxSynopsisWords+1)
	}
	if got := synopsis("Package x is short: a.b or c. Details follow."); got != "Package x is short: a.b or c." {
		t.Errorf("synopsis = %q", got)
	}
}

// docText returns the package doc comment of the file at path, "" when it has none.
func docText(t *testing.T, path string) string {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		return ""
	}
	return strings.TrimSpace(f.Doc.Text())
}
