package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/doctest"
)

// TestTransfersDoc runs the walkthrough of docs/transfers.md as written, each command in a
// shell in a network namespace of its own (its ports are fixed), with bin/vigil built from
// this tree; a command whose output is not yet what the document shows (the location has not
// its verdicts yet) is run again for up to 45 seconds.
func TestTransfersDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("runs docs/transfers.md's walkthrough; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the walkthrough a network namespace of its own (its ports are fixed)")
	}
	for _, tool := range []string{"ip", "dig", "nsd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian: iproute2, dnsutils, nsd)", tool)
		}
	}
	steps := docSteps(t, "../../docs/transfers.md")
	work := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(work, "bin", "vigil"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(work, "examples")); err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	ns := "vglxfr" + hex.EncodeToString(suffix)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v %s: cannot make a network namespace here", err, out)
	}
	t.Cleanup(func() {
		// End the walkthrough's background processes, then the namespace.
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, pid := range strings.Fields(string(out)) {
			_ = exec.Command("kill", pid).Run()
		}
		time.Sleep(500 * time.Millisecond)
		out, _ = exec.Command("ip", "netns", "pids", ns).Output()
		for _, pid := range strings.Fields(string(out)) {
			_ = exec.Command("kill", "-9", pid).Run()
		}
		_ = exec.Command("ip", "netns", "delete", ns).Run()
	})
	if out, err := exec.Command("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v %s", err, out)
	}
	for _, s := range steps {
		start := time.Now()
		for try := 1; ; try++ {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "sh", "-c", s.Cmd)
			cmd.Dir = work
			b, _ := cmd.CombinedOutput()
			cancel()
			if doctest.Match(string(b), s.Want) {
				t.Logf("$ %s  (%v, %d tries)", s.Cmd, time.Since(start).Round(100*time.Millisecond), try)
				break
			}
			if time.Since(start) > 45*time.Second {
				logs, _ := exec.Command("sh", "-c", "tail -n 20 "+filepath.Join(work, "build/xfr/*.log")).CombinedOutput()
				t.Fatalf("$ %s\nprinted, after %v:\n%s\ndocs/transfers.md says:\n%s\nlogs:\n%s", s.Cmd, time.Since(start).Round(time.Second),
					b, strings.Join(s.Want, "\n"), logs)
			}
			time.Sleep(time.Second)
		}
	}
}
