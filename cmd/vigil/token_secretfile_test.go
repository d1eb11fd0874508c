package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/control"
)

// TestTokenCreateSecretFile: with -secret-file, vigil token create writes the secret to a new
// file of mode 0600 and prints only the voters' line, which control reads back as the token
// of that secret; an existing file is refused and kept.
func TestTokenCreateSecretFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "alice.token")
	code, stdout, stderr := runValidateCmd(t, "token", "create", "-name", "alice", "-scope", "write", "-secret-file", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	secret, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode %v, want 0600", fi.Mode().Perm())
	}
	if strings.Contains(stdout, strings.TrimSpace(string(secret))) || strings.Count(stdout, "\n") != 1 {
		t.Errorf("stdout holds more than the voters' line:\n%s", stdout)
	}
	// The printed line, as a voter's token file, admits the written secret under alice's name.
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	ts, err := control.LoadTokenFiles(tokens, "")
	if err != nil {
		t.Fatal(err)
	}
	named := ts.Named
	if len(ts.Write) != 0 || len(named) != 1 || named[0].Name != "alice" || named[0].Hash != control.HashToken(strings.TrimSpace(string(secret))) {
		t.Errorf("the printed line does not hold the secret's hash under alice: %+v", named)
	}

	code, _, stderr = runValidateCmd(t, "token", "create", "-name", "bob", "-secret-file", path)
	if again, _ := os.ReadFile(path); code != 1 || string(again) != string(secret) || !strings.Contains(stderr, "file exists") {
		t.Errorf("a second token into the same file: exit %d, %s; the file changed: %v", code, stderr, string(again) != string(secret))
	}
}
