package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/control"
)

// TestOperationsDocTokenExample: the token that docs/operations.md creates (its `vigil token
// create -name NAME -scope SCOPE`) can make the overrides of its example, which name that
// token as their author: each `$ vigil override` command of the "Maintenance overrides" block,
// run with the token alone against a voter holding the token's line, succeeds, and the list
// shows NAME as the author.
func TestOperationsDocTokenExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	create := regexp.MustCompile("`vigil token create -name ([a-z0-9-]+) -scope ([^` ]+)`").FindStringSubmatch(doc)
	if create == nil {
		t.Fatal("docs/operations.md: no `vigil token create -name NAME -scope SCOPE`")
	}
	_, section, ok := strings.Cut(doc, "## Maintenance overrides")
	if !ok {
		t.Fatal("docs/operations.md: no section Maintenance overrides")
	}
	block := regexp.MustCompile("(?s)```text\n(.*?)```").FindStringSubmatch(section)
	if block == nil {
		t.Fatal("docs/operations.md, Maintenance overrides: no ```text example")
	}
	var cmds [][]string
	for l := range strings.Lines(block[1]) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "$ vigil "); ok {
			cmds = append(cmds, shellWords(t, rest))
		}
	}
	if len(cmds) < 3 {
		t.Fatalf("docs/operations.md, Maintenance overrides: %d vigil commands, want the example's", len(cmds))
	}

	for _, v := range clientEnv {
		t.Setenv(v, "")
	}
	secret := filepath.Join(t.TempDir(), "token")
	code, out, errOut := vigilRun("token", "create", "-name", create[1], "-scope", create[2], "-secret-file", secret)
	if code != 0 {
		t.Fatalf("vigil token create -name %s -scope %s: exit %d %s", create[1], create[2], code, errOut)
	}
	tok, err := control.ParseTokenLine(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("the token's line %q: %v", out, err)
	}
	url := plainVoter(t, tok)
	t.Setenv(envServer, url)
	t.Setenv(envToken, agentToken)
	if code, _, errOut := vigilRun("apply", "-f", "../../examples/demo.yaml"); code != 0 {
		t.Fatalf("apply the demo: exit %d %s", code, errOut)
	}
	t.Setenv(envToken, "")
	t.Setenv(envTokenFile, secret)
	for _, c := range cmds {
		code, out, errOut := vigilRun(c...)
		if code != 0 {
			t.Errorf("vigil %s with %s's token (scope %s): exit %d\n%s%s", strings.Join(c, " "), create[1], create[2], code, out, errOut)
		}
		if len(c) > 1 && c[1] == "list" && !strings.Contains(out, "  "+create[1]+"  ") {
			t.Errorf("vigil override list does not name %s as the author:\n%s", create[1], out)
		}
	}
}

// shellWords splits a command line into words as sh does for the docs' examples: spaces
// separate, double quotes group.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
