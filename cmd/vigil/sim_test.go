package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimUsageErrors: bad invocations exit 2 and say why, before any network starts.
func TestSimUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("down us-east\ncut mars\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sim"}, "usage: vigil sim"},
		{[]string{"sim", "partition", "cascade"}, "usage: vigil sim"},
		{[]string{"sim", "mars-landing"}, `unknown scenario "mars-landing" (scenarios: all-down, cascade, checker-offline, control-down, `},
		{[]string{"sim", "-script", bad}, `bad.txt:2: cut: unknown region "mars"`},
		{[]string{"sim", "-script", filepath.Join(t.TempDir(), "missing.txt")}, "no such file"},
		{[]string{"sim", "-log-level", "loud", "partition"}, "-log-level"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(t.Context(), tt.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("vigil %s: exit %d, stderr %q; want 2 and %q", strings.Join(tt.args, " "), code, errb.String(), tt.want)
		}
	}
}

// TestSimScript runs a short script end to end: a failover and back, checked, with the
// timeline, the verdict tables and the figures printed.
func TestSimScript(t *testing.T) {
	if testing.Short() {
		t.Skip("long: a dev network")
	}
	script := filepath.Join(t.TempDir(), "failover.txt")
	if err := os.WriteFile(script, []byte("down us-east\nwait 30s\nup us-east\nwait 30s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"sim", "-f", "../../examples/demo.yaml", "-script", script}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"down us-east (model: us-east should drop web-us-east", "verdict web-us-east at sa-east: unhealthy",
		"location eu-west", "violations             0", "healthy flips          0", "\nPASS\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, out.String())
		}
	}
}

// TestSimDefaultsToEmbeddedDemo: without -f, vigil sim runs on the demo built into vigil, as
// vigil dev and validate do, wherever it runs from (here cmd/vigil, where no
// examples/demo.yaml is). The context is over, so the network stops as it starts.
func TestSimDefaultsToEmbeddedDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out, errb bytes.Buffer
	run(ctx, []string{"sim", "partition"}, &out, &errb)
	if strings.Contains(errb.String(), "no such file") || !strings.Contains(out.String(), "vigil sim: scenario partition on regions") {
		t.Errorf("vigil sim partition without -f: stdout %q, stderr %q; want the scenario started on the embedded demo", out.String(), errb.String())
	}
}
