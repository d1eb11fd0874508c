package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimRealUsageErrors: bad real-process invocations exit 2 and say why, before anything
// is built (the real runs themselves are netlab's tests).
func TestSimRealUsageErrors(t *testing.T) {
	wait := filepath.Join(t.TempDir(), "wait.txt")
	if err := os.WriteFile(wait, []byte("cut sa-east\nwait 10s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "-real"}, "usage: vigil sim -real"},
		{[]string{"sim", "-real", "isolated", "story"}, "usage: vigil sim -real"},
		{[]string{"sim", "-real", "mars-landing", "-keep", "/nowhere"}, `unknown scenario "mars-landing" (scenarios: checkers-killed, `},
		{[]string{"sim", "-real", "-script", wait}, "wait does not run on a real network"},
		{[]string{"sim", "-real", "isolated", "-regions", "us-east,mars"}, `unknown region "sa-east"`},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(t.Context(), tt.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("vigil %s: exit %d, stderr %q; want 2 and %q", strings.Join(tt.args, " "), code, errb.String(), tt.want)
		}
	}
}
