package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/internal/docgen"
)

//go:generate env VIGIL_UPDATE_DOCS=1 go test -count=1 -run ^TestCLIReference$ .

// cliReference renders the generated part of docs/cli.md: the list of commands, then every
// command's and subcommand's -h output, in the order of the table run dispatches from.
func cliReference(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("| command | purpose |\n| --- | --- |\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "| [`vigil %s`](#vigil-%s) | %s |\n", c.name, c.name, c.summary)
	}
	for _, c := range commands() {
		paths := [][]string{{c.name}}
		for _, s := range c.subs {
			paths = append(paths, []string{c.name, s.name})
		}
		for _, p := range paths {
			code, out, errOut, _ := runCaptured(canceled(), append(p, "-h")...)
			if code != 0 || errOut != "" {
				t.Fatalf("vigil %s -h: exit %d, stderr %q", strings.Join(p, " "), code, errOut)
			}
			level := "##"
			if len(p) > 1 {
				level = "###"
			}
			fmt.Fprintf(&b, "\n%s vigil %s\n\n```text\n%s\n```\n", level, strings.Join(p, " "), strings.TrimRight(out, "\n"))
		}
	}
	return b.Bytes()
}

// TestCLIReference fails when docs/cli.md does not hold what the commands' help prints, so
// that the CLI reference cannot drift from the binary; go generate ./cmd/vigil rewrites it.
func TestCLIReference(t *testing.T) {
	// The help shows defaults only, but keep the client variables out of it all the same.
	for _, v := range []string{"VIGIL_SERVER", "VIGIL_TOKEN", "VIGIL_TOKEN_FILE", "VIGIL_CACERT", "VIGIL_CLIENT_CERT", "VIGIL_CLIENT_KEY"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	docgen.Section(t, "../../docs/cli.md", "cli", cliReference(t), "go generate ./cmd/vigil")
}
