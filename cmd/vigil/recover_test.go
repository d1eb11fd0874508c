package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecoverCommand: vigil recover changes nothing unless told the majority is lost, and
// says what is wrong with a data directory that holds no voter.
func TestRecoverCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "control"), 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"recover", "-data-dir", dir, "-id", "c1"}, exitUsage, "-majority-lost"},
		{[]string{"recover", "-majority-lost", "-data-dir", dir, "-id", "c1"}, exitFailure, "holds no raft log"},
		{[]string{"recover", "-majority-lost", "-data-dir", dir, "extra"}, exitUsage, "unexpected argument"},
		{[]string{"voters", "remove"}, exitUsage, "want 1 argument"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), c.args, &out, &errOut)
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("vigil %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, errOut.String(), c.code, c.want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "control")); len(entries) != 0 {
		t.Errorf("a refused recover left files: %v", entries)
	}
}
