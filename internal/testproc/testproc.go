// Package testproc runs a peer's process (NSD, Knot, PowerDNS) for the length of a test, so
// that no process outlives its test. It keeps the process's output and, at the test's end,
// stops it as a service manager would: SIGTERM and then, after a grace period, SIGKILL.
package testproc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/syncbuf"
)

// Grace is how long a process has to exit after SIGTERM before it is killed.
const Grace = 10 * time.Second

// Start starts cmd, its standard output and error going to the returned buffer, and stops it
// when the test ends. exited is closed when the process has exited, on its own or stopped.
func Start(t testing.TB, cmd *exec.Cmd) (out *syncbuf.Buffer, exited <-chan struct{}) {
	t.Helper()
	out = new(syncbuf.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(Grace):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return out, done
}

// Chromium returns the path of a Chromium binary for a headless browser test, or skips the
// test saying how to install one.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary on PATH (Debian: apt-get install chromium; .ci/run installs it)")
	return ""
}
