package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// TestComposeDemoExports: the line `make demo` prints for the client commands reaches a voter
// set up as the compose demo's control-1 (its certificate, its CA and its token file, over
// TLS on 127.0.0.1): with only the exported variables, an operator applies, sets, lists and
// clears an override and reads the audit log, as docs/operations.md does against vigil dev.
func TestComposeDemoExports(t *testing.T) {
	for _, v := range clientEnv {
		t.Setenv(v, "")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\t@echo "  (export VIGIL_SERVER=https://[^"]*)"$`).FindStringSubmatch(string(mk))
	if m == nil {
		t.Fatal("Makefile: make demo prints no line to export for the client commands")
	}
	pki := filepath.Join(root, "deploy", "compose", "tls")
	store, err := tlsconf.Load(tlsconf.Files{Cert: filepath.Join(pki, "control-1.pem"), Key: filepath.Join(pki, "control-1-key.pem"),
		CA: filepath.Join(pki, "ca.pem")}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(root, "deploy", "compose", "token")
	tokens, err := control.LoadTokenFiles(tokenFile, "")
	if err != nil {
		t.Fatal(err)
	}
	api := startTLSVoter(t, store, func(c *agent.ControlConfig) {
		c.WriteTokens, c.Tokens, c.TokenFile, c.OpenReads = tokens.Write, tokens.Named, tokenFile, true
	})
	port := api[strings.LastIndex(api, ":")+1:]

	// The line as the shell gets it from make: $(CURDIR) is the repository root, $${...}
	// the published port (VIGIL_CONTROL_PORT, here the test voter's).
	line := strings.NewReplacer("$(CURDIR)", root, "$${VIGIL_CONTROL_PORT:-7700}", port).Replace(m[1])
	exports, unsets, ok := strings.Cut(line, ";")
	if !ok || !strings.HasPrefix(strings.TrimSpace(unsets), "unset ") {
		t.Fatalf("make demo's line %q: want \"export ...; unset ...\"", line)
	}
	set := map[string]string{}
	for _, kv := range strings.Fields(strings.TrimPrefix(exports, "export ")) {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	for _, v := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(unsets), "unset ")) {
		set[v] = ""
	}
	for _, v := range clientEnv {
		if _, ok := set[v]; !ok {
			t.Errorf("make demo's line neither sets nor unsets %s: a value left from another network would stay", v)
		}
	}

	for k, v := range set {
		t.Setenv(k, v)
	}
	waitUntil(t, 15*time.Second, "the demo applied with the exported line", func() bool {
		code, _, _ := vigilRun("apply", "-f", "../../examples/demo.yaml", "-timeout", "2s")
		return code == 0
	})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"override", "set", "-check", "web-us-east", "-state", "unhealthy", "-reason", "deploy", "-for", "30m"}, "set until"},
		{[]string{"override", "list"}, "check web-us-east"},
		{[]string{"override", "clear", "-check", "web-us-east"}, "cleared"},
		{[]string{"audit"}, "clear_override"},
		{[]string{"audit", "-verify"}, "OK: "},
	} {
		code, out, errOut := vigilRun(c.args...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("vigil %s with make demo's line exported: exit %d\n%s%s\nwant %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}
