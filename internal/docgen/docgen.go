// Package docgen keeps generated sections of the documentation in step with the code they are
// rendered from. A test renders a section from the code (the commands' help, the configuration
// types, the OpenAPI document) and docgen compares it with the section between its markers in
// a file of docs/, or rewrites it there when VIGIL_UPDATE_DOCS is set (go generate does so).
package docgen

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// UpdateVar is the environment variable that makes Section rewrite instead of compare.
const UpdateVar = "VIGIL_UPDATE_DOCS"

// markers returns the lines that open and close the section name.
func markers(name string) (begin, end string) {
	return "<!-- BEGIN GENERATED " + name + " -->\n", "<!-- END GENERATED " + name + " -->\n"
}

// Section fails t when the section name of file (between its BEGIN and END GENERATED
// markers) is not body; with VIGIL_UPDATE_DOCS set it writes body there instead. regenerate
// is the command a reader runs to rewrite it, named in the failure.
func Section(t testing.TB, file, name string, body []byte, regenerate string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("docgen: %v", err)
	}
	begin, end := markers(name)
	i := bytes.Index(b, []byte(begin))
	j := bytes.Index(b, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("docgen: %s has no section between %q and %q: add the two lines where the generated text goes", file, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	have := b[i+len(begin) : j]
	if bytes.Equal(have, body) {
		return
	}
	if os.Getenv(UpdateVar) != "" {
		out := append(append(append([]byte(nil), b[:i+len(begin)]...), body...), b[j:]...)
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatalf("docgen: %v", err)
		}
		t.Logf("docgen: rewrote the section %s of %s", name, file)
		return
	}
	t.Errorf("docgen: the section %s of %s is not what the code says (%s); run %s to rewrite it", name, file, firstDifference(have, body), regenerate)
}

// firstDifference describes the first line where have and want differ.
func firstDifference(have, want []byte) string {
	hl, wl := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(hl), len(wl)) {
		if hl[i] != wl[i] {
			return fmt.Sprintf("line %d of the section: the file has %q, the code %q", i+1, hl[i], wl[i])
		}
	}
	return fmt.Sprintf("the file's section has %d lines, the code's %d", len(hl), len(wl))
}
