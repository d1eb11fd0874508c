package vigil_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function of the product and its harnesses, from the line of its func
// keyword to its closing brace: a longer one does several things, each of which can be named.
const maxFuncLines = 80

// longFuncsAllowed are the functions over maxFuncLines not split yet, by file and name, with
// their length when listed: one may shrink, not grow, and one split leaves the list.
var longFuncsAllowed = map[string]int{}

// TestFunctionLength fails for a function of a non-test file over maxFuncLines lines, unless
// longFuncsAllowed lists it at that length or more.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, path := range sourceFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range longFuncs(fset, f) {
			key := filepath.ToSlash(path) + " " + fn.name
			seen[key] = true
			if limit, ok := longFuncsAllowed[key]; !ok || fn.lines > limit {
				t.Errorf("%s: %s is %d lines, over %d: split it into functions that each do one thing",
					fset.Position(fn.pos), fn.name, fn.lines, maxFuncLines)
			}
		}
	}
	for key := range longFuncsAllowed {
		if !seen[key] {
			t.Errorf("%s is listed in longFuncsAllowed but is not over %d lines (or is gone): take it off the list", key, maxFuncLines)
		}
	}
}

type longFunc struct {
	name  string // Type.Method or Func
	pos   token.Pos
	lines int
}

// longFuncs returns the functions and methods of f over maxFuncLines lines.
func longFuncs(fset *token.FileSet, f *ast.File) []longFunc {
	var out []longFunc
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Type.Func).Line + 1
		if n <= maxFuncLines {
			continue
		}
		out = append(out, longFunc{name: funcName(fd), pos: fd.Pos(), lines: n})
	}
	return out
}

// funcName returns Type.Method for a method, the name for a function.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestLongFuncsCounted: the length counted runs from the func keyword to the closing brace,
// so that a function of maxFuncLines+1 lines is caught and one of maxFuncLines is not.
func TestLongFuncsCounted(t *testing.T) {
	body := func(lines int) string { return strings.Repeat("\tx++\n", lines-2) }
	src := "package p\n\n// long is one line too long.\nfunc long() {\n" + body(maxFuncLines+1) + "}\n\n" +
		"func (T) fits() {\n" + body(maxFuncLines) + "}\n\nfunc (*G[K]) long() {\n" + body(maxFuncLines+1) + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, fn := range longFuncs(fset, f) {
		got = append(got, fn.name)
	}
	if strings.Join(got, " ") != "long G.long" {
		t.Errorf("long functions %q, want [long G.long]", got)
	}
}
