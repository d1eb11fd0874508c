package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestReproducibleBuild builds the linux/amd64 release binary twice, the way `make release`
// does (deploy/release/release.sh binary), the second time from another temporary directory
// into another output path: the bytes must be the same. (The build cache is shared: an empty
// one costs 5 minutes on a busy machine; make release checks that form.) The binary then says
// which version, commit and commit time it was built from.
func TestReproducibleBuild(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: the release stamps the commit")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Run(); err != nil {
		t.Skipf("%s is not a git work tree: the release stamps the commit", root)
	}
	const version = "0.0.0-reprotest"
	build := func(out string, env ...string) (string, time.Duration) {
		t.Helper()
		start := time.Now()
		cmd := exec.Command("bash", filepath.Join(root, "deploy/release/release.sh"), "binary", "linux", "amd64", out, version)
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("release.sh binary: %v\n%s", err, b)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:]), time.Since(start)
	}
	first := filepath.Join(t.TempDir(), "vigil")
	sum1, d1 := build(first)
	second := filepath.Join(t.TempDir(), "out", "vigil-second")
	if err := os.MkdirAll(filepath.Dir(second), 0o755); err != nil {
		t.Fatal(err)
	}
	sum2, d2 := build(second, "TMPDIR="+t.TempDir())
	t.Logf("first build %v, second %v: sha256 %s", d1.Round(time.Millisecond), d2.Round(time.Millisecond), sum1)
	if sum1 != sum2 {
		t.Fatalf("two builds of one commit differ: %s and %s (compare them with go version -m)", sum1, sum2)
	}

	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return
	}
	out, err := exec.Command(first, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("vigil version: %v\n%s", err, out)
	}
	head, _ := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	gitTime := exec.Command("git", "-C", root, "log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ")
	gitTime.Env = append(os.Environ(), "TZ=UTC")
	at, _ := gitTime.Output()
	want := []string{"vigil " + version, "commit " + strings.TrimSpace(string(head)), "(" + strings.TrimSpace(string(at)) + ")", runtime.Version() + " linux/amd64"}
	for _, w := range want {
		if !bytes.Contains(out, []byte(w)) {
			t.Errorf("vigil version says\n%s\nwithout %q", out, w)
		}
	}
}
