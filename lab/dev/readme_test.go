package dev

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/syncbuf"

	"github.com/vigil-dns/vigil/internal/doctest"
)

// runSteps runs each step in dir with sh (after the words of prefix, when any), its command
// rewritten by subst, until it prints what the walkthrough says, asking again for up to within:
// answers change a few seconds after a fault.
func runSteps(t *testing.T, dir string, env []string, steps []readmeStep, subst *strings.Replacer, within time.Duration, prefix ...string) {
	t.Helper()
	for _, s := range steps {
		cmdline := subst.Replace(s.cmd)
		start := time.Now()
		var out string
		for try := 0; ; try++ {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			args := append(slices.Clone(prefix), "sh", "-c", cmdline)
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
			b, _ := cmd.CombinedOutput()
			cancel()
			out = string(b)
			if doctest.Match(out, s.want) {
				t.Logf("$ %s  (%v, %d tries)", s.cmd, time.Since(start).Round(100*time.Millisecond), try+1)
				break
			}
			if time.Since(start) > within || t.Context().Err() != nil {
				t.Fatalf("$ %s\n(run as %s) printed, after %v:\n%s\nthe walkthrough says:\n%s", s.cmd, cmdline,
					time.Since(start).Round(time.Second), out, strings.Join(s.want, "\n"))
			}
			time.Sleep(time.Second)
		}
	}
}

// TestReadme runs the configuration reference's `vigil validate` (docs/config.md), the
// README's five-minute tour against `vigil dev`, the operations and DNSSEC walkthroughs
// against it with the client configuration it prints, and then the operator's guide's first
// network of `vigil agent` processes (docs/operator-guide.md), as written,
// each command in a shell, in a network namespace of its own (so that the fixed ports they
// use clash with nothing on this machine), with bin/vigil built from this tree; `make run`
// is played by bin/vigil dev, started in the namespace.
func TestReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's tour and the operator's guide's first network (about a minute); skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the walkthroughs' commands a network namespace of their own (their ports are fixed)")
	}
	for _, tool := range []string{"ip", "dig"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian: iproute2, dnsutils) to run the walkthroughs' commands", tool)
		}
	}
	validate := walkthroughSteps(t, "docs/config.md", "Checking a file")
	tour, agent := walkthroughSteps(t, "README.md", "Five-minute tour"), walkthroughSteps(t, "docs/operator-guide.md", "A first network on one machine")
	ops, dnssec := walkthroughSteps(t, "docs/operations.md", "Try it on the dev network"), walkthroughSteps(t, "docs/dnssec.md", "Try it on the dev network")

	work := t.TempDir()
	binDir := filepath.Join(work, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "vigil"), "../../cmd/vigil")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
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
	prefix := "vgl"
	if p := os.Getenv("VIGIL_NETLAB_PREFIX"); p != "" && len(p) <= 8 && strings.Trim(p, "abcdefghijklmnopqrstuvwxyz0123456789") == "" {
		prefix = p // as lab/netlab names its namespaces
	}
	ns := prefix + "readme" + hex.EncodeToString(suffix)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v %s: cannot make a network namespace here", err, out)
	}
	t.Cleanup(func() { removeNamespace(t, ns) })
	if out, err := exec.Command("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v %s", err, out)
	}
	inNS := []string{"ip", "netns", "exec", ns}
	same := strings.NewReplacer()

	runSteps(t, work, nil, validate, same, 10*time.Second, inNS...)

	// make run: vigil dev in the namespace, until it says where it listens.
	var devOut syncbuf.Buffer
	devCmd := exec.Command("ip", "netns", "exec", ns, filepath.Join(binDir, "vigil"), "dev")
	devCmd.Dir, devCmd.Stdout, devCmd.Stderr = work, &devOut, io.Discard
	if err := devCmd.Start(); err != nil {
		t.Fatal(err)
	}
	devDone := make(chan struct{})
	go func() { _ = devCmd.Wait(); close(devDone) }()
	stopDev := func() {
		_ = devCmd.Process.Signal(os.Interrupt)
		select {
		case <-devDone:
		case <-time.After(15 * time.Second):
			_ = devCmd.Process.Kill()
			<-devDone
		}
	}
	t.Cleanup(stopDev)
	for start := time.Now(); !strings.Contains(devOut.String(), "embedded examples/demo.yaml applied"); time.Sleep(100 * time.Millisecond) {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("vigil dev did not start within 60s:\n%s", devOut.String())
		}
	}
	runSteps(t, work, nil, tour, same, 45*time.Second, inNS...)
	// The operations and DNSSEC walkthroughs run with the client configuration vigil dev
	// printed, as a reader who exported it would.
	clientEnv := exportedEnv(t, devOut.String())
	runSteps(t, work, clientEnv, ops, same, 45*time.Second, inNS...)
	runSteps(t, work, clientEnv, dnssec, same, 45*time.Second, inNS...)
	stopDev()

	runSteps(t, work, nil, agent, same, 45*time.Second, inNS...)
}

// exportedEnv returns the environment of the shell line vigil dev prints for the client
// commands ("export K=V ...; unset K ..."): each exported variable, and each unset one empty.
func exportedEnv(t *testing.T, devOutput string) []string {
	t.Helper()
	for _, line := range strings.Split(devOutput, "\n") {
		exports, unsets, ok := strings.Cut(strings.TrimSpace(line), ";")
		if !ok || !strings.HasPrefix(exports, "export ") {
			continue
		}
		env := strings.Fields(strings.TrimPrefix(exports, "export "))
		for _, v := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(unsets), "unset")) {
			env = append(env, v+"=")
		}
		return env
	}
	t.Fatalf("vigil dev printed no line to export for the client commands:\n%s", devOutput)
	return nil
}

// removeNamespace ends every process left in the namespace (the walkthroughs' background
// commands), by its id, and deletes the namespace.
func removeNamespace(t *testing.T, ns string) {
	for range 20 {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			_ = exec.Command("kill", p).Run()
		}
		time.Sleep(250 * time.Millisecond)
	}
	if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
		t.Errorf("ip netns del %s: %v %s", ns, err, out)
	}
}
