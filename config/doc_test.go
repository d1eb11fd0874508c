package config

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/internal/docgen"
)

//go:generate env VIGIL_UPDATE_DOCS=1 go test -count=1 -run ^TestConfigReference$ .

// fieldDocs reads the doc comment of every field of every struct type of this package's
// sources: type name -> Go field name -> comment text.
func fieldDocs(t *testing.T) map[string]map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			docs := map[string]string{}
			for _, fld := range st.Fields.List {
				for _, name := range fld.Names {
					docs[name.Name] = strings.Join(strings.Fields(fld.Doc.Text()), " ")
				}
			}
			out[ts.Name.Name] = docs
			return true
		})
	}
	return out
}

// docPhrases turn the Go names that doc comments use into what a reader of the YAML sees.
// A comment that names another Go identifier fails the test, so that the reference never
// shows one.
func docPhrases() *strings.Replacer {
	return strings.NewReplacer(
		"BodyMatchLimit bytes", fmt.Sprintf("%d bytes", BodyMatchLimit),
		"MinCheckRegions", fmt.Sprint(MinCheckRegions),
		"SecretSet", fmt.Sprintf("%q", SecretSet),
		"SecretClear", fmt.Sprintf("%q", SecretClear),
		"as RedactURL does ", "",
		" (KeepSecrets)", "",
		"len(Children)", "the number of children",
	)
}

var goName = regexp.MustCompile(`\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b`)

// yamlType names the YAML form of a Go type.
func yamlType(ty reflect.Type) string {
	switch ty {
	case reflect.TypeFor[Duration]():
		return "duration"
	case reflect.TypeFor[StatusRange]():
		return "status range"
	}
	switch ty.Kind() {
	case reflect.Pointer:
		return yamlType(ty.Elem())
	case reflect.Slice:
		return "list of " + yamlType(ty.Elem())
	case reflect.Map:
		return "map of " + yamlType(ty.Key()) + " to " + yamlType(ty.Elem())
	case reflect.Struct:
		return "object"
	case reflect.Bool:
		return "boolean"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	}
	return "string"
}

// structOf returns the struct a field's value holds (through pointers and lists), if any
// that the reference describes field by field.
func structOf(ty reflect.Type) (reflect.Type, bool) {
	for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
		ty = ty.Elem()
	}
	if ty.Kind() != reflect.Struct || ty == reflect.TypeFor[Duration]() || ty == reflect.TypeFor[StatusRange]() {
		return nil, false
	}
	return ty, true
}

// configReference renders the generated part of docs/config.md: for the document and every
// object in it, a table of its fields with their YAML type and the doc comment of the Go
// field, in the order of the types.
func configReference(t *testing.T) []byte {
	t.Helper()
	docs := fieldDocs(t)
	phrases := docPhrases()
	var b bytes.Buffer
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		yamlNames := map[string]string{}
		for f := range ty.Fields() {
			if tag := strings.Split(f.Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
				yamlNames[f.Name] = tag
			}
		}
		title := "the document"
		if path != "" {
			title = "`" + path + "`"
		}
		fmt.Fprintf(&b, "\n### %s\n\n| field | type | meaning |\n| --- | --- | --- |\n", title)
		var nested []reflect.StructField
		lastDoc, lastDocField := "", ""
		for f := range ty.Fields() {
			name, ok := yamlNames[f.Name]
			if !ok {
				continue
			}
			text := docs[ty.Name()][f.Name]
			if text == "" && strings.Contains(lastDoc, f.Name) {
				// One comment for several fields ("Refresh, Retry and Expire are ...").
				text = "See `" + yamlNames[lastDocField] + "`."
			}
			if text == "" {
				t.Errorf("config.%s.%s (%s%s) has no doc comment: the configuration reference needs one", ty.Name(), f.Name, prefix(path), name)
				continue
			}
			if docs[ty.Name()][f.Name] != "" {
				lastDoc, lastDocField = text, f.Name
			}
			// The comment names its field and its siblings by their Go names: use the YAML ones.
			// Acronyms (TTL, SNI) stay as words elsewhere in the text.
			if rest, ok := strings.CutPrefix(text, f.Name); ok && (rest == "" || !isWordByte(rest[0])) {
				text = "`" + name + "`" + rest
			}
			for goN, yamlN := range yamlNames {
				if strings.ToUpper(goN) != goN {
					text = regexp.MustCompile(`\b`+goN+`\b`).ReplaceAllString(text, "`"+yamlN+"`")
				}
			}
			text = phrases.Replace(text)
			if m := goName.FindString(text); m != "" && m != "ExternalDNS" {
				t.Errorf("config.%s.%s: its doc comment names the Go identifier %s; add it to docPhrases or reword the comment", ty.Name(), f.Name, m)
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, yamlType(f.Type), strings.ReplaceAll(text, "|", `\|`))
			if _, ok := structOf(f.Type); ok {
				nested = append(nested, f)
			}
		}
		for _, f := range nested {
			st, _ := structOf(f.Type)
			p := prefix(path) + yamlNames[f.Name]
			if f.Type.Kind() == reflect.Slice {
				p += "[]"
			}
			walk(p, st)
		}
	}
	walk("", reflect.TypeFor[Document]())
	return b.Bytes()
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + "."
}

// TestConfigReference fails when docs/config.md does not describe exactly the fields of
// the configuration types, as their doc comments do: a field added without a comment, or
// one renamed or removed, shows; go generate ./config rewrites the reference.
func TestConfigReference(t *testing.T) {
	if _, err := os.Stat("../docs/config.md"); err != nil {
		t.Fatal(err)
	}
	docgen.Section(t, "../docs/config.md", "config", configReference(t), "go generate ./config")
}
