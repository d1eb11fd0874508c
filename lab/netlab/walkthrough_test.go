package netlab

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/doctest"
)

// TestWalkthroughThreeRegions runs docs/walkthroughs/three-regions.md as written: every
// command of its console blocks, in order, in one bash (so that exported variables and
// background jobs carry over, as in a reader's terminal), in a network namespace of its own
// (its ports are fixed), with cmd/vigil built from this tree first on PATH. Each command's
// output must be what the document shows, and its exit status 0 unless the document shows
// it failing (its output starts "vigil ...: "). Waits are the document's own commands.
func TestWalkthroughThreeRegions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-region network of processes (about 40 s); skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the walkthrough's processes a network namespace of their own (their ports are fixed)")
	}
	for _, tool := range []string{"ip", "bash", "dig", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s, which the walkthrough uses (Debian: iproute2, bash, bind9-dnsutils, curl)", tool)
		}
	}
	doc, err := os.ReadFile("../../docs/walkthroughs/three-regions.md")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := doctest.Steps(string(doc))
	if err != nil {
		t.Fatalf("three-regions.md: %v", err)
	}
	if len(steps) < 20 {
		t.Fatalf("three-regions.md: %d commands, expected the whole walkthrough", len(steps))
	}

	bin := vigilBinary(t, "")
	work := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(work, "examples")); err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	ns, err := addNamespace(t.Context(), fmt.Sprintf("%s%d-walk3-%s", namePrefix, os.Getpid(), hex.EncodeToString(suffix)))
	if err != nil {
		t.Skipf("cannot make a network namespace here: %v", err)
	}
	t.Cleanup(func() { endNamespace(t, ns) })

	sh := startShell(t, ns.Name, work, filepath.Dir(bin))
	start := time.Now()
	for i, s := range steps {
		t0 := time.Now()
		out, status, err := sh.run(i, s.Cmd, 60*time.Second)
		if err != nil {
			t.Fatalf("three-regions.md:%d: $ %s\n%v; printed so far:\n%s\n%s", s.Line, s.Cmd, err, out, logTails(work))
		}
		failing := len(s.Want) > 0 && strings.HasPrefix(s.Want[0], "vigil ") && strings.Contains(s.Want[0], ": ")
		if !doctest.Match(out, s.Want) || (status != 0 && !failing) {
			t.Fatalf("three-regions.md:%d: $ %s\nexit status %d, printed:\n%s\nthe document says:\n%s\n%s",
				s.Line, s.Cmd, status, out, strings.Join(s.Want, "\n"), logTails(work))
		}
		t.Logf("$ %s  (%v)", s.Cmd, time.Since(t0).Round(100*time.Millisecond))
	}
	t.Logf("%d commands in %v", len(steps), time.Since(start).Round(time.Second))
}

// walkShell is one bash that runs a walkthrough's commands in turn.
type walkShell struct {
	stdin io.Writer
	lines chan string
}

// startShell starts bash in namespace ns and directory dir, with binDir first on PATH and
// its standard error joined to its output. It is killed, with its background jobs, when the
// test ends.
func startShell(t *testing.T, ns, dir, binDir string) *walkShell {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "bash", "--noprofile", "--norc")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "LC_ALL=C",
		"VIGIL_SERVER=", "VIGIL_TOKEN=", "VIGIL_TOKEN_FILE=", "VIGIL_CACERT=", "VIGIL_CLIENT_CERT=", "VIGIL_CLIENT_KEY=")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		r.Close()
	})
	sh := &walkShell{stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		defer close(sh.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			sh.lines <- sc.Text()
		}
	}()
	return sh
}

// run runs cmd as the i-th command and returns what it printed and its exit status; the
// error says it did not finish within limit.
func (sh *walkShell) run(i int, cmd string, limit time.Duration) (string, int, error) {
	mark := fmt.Sprintf("__walk3_end_%d ", i)
	if _, err := fmt.Fprintf(sh.stdin, "%s\nprintf '\\n%s%%d\\n' $?\n", cmd, mark); err != nil {
		return "", 0, fmt.Errorf("write to bash: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out []string
	for {
		select {
		case l, ok := <-sh.lines:
			if !ok {
				return strings.Join(out, "\n"), 0, fmt.Errorf("bash ended")
			}
			if rest, found := strings.CutPrefix(l, mark); found {
				status, err := strconv.Atoi(rest)
				if len(out) > 0 && out[len(out)-1] == "" {
					out = out[:len(out)-1] // the newline printed before the mark
				}
				return strings.Join(out, "\n"), status, err
			}
			out = append(out, l)
		case <-ctx.Done():
			return strings.Join(out, "\n"), 0, fmt.Errorf("not finished within %v", limit)
		}
	}
}

// logTails returns the last lines of each log the walkthrough wrote, for a failure's message.
func logTails(work string) string {
	logs, _ := filepath.Glob(filepath.Join(work, "three", "*.log"))
	var b strings.Builder
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", filepath.Base(l), min(len(lines), 8), strings.Join(lines[max(0, len(lines)-8):], "\n"))
	}
	return b.String()
}

// endNamespace ends every process left in the namespace (the walkthrough's background jobs),
// by its id, and deletes the namespace.
func endNamespace(t *testing.T, ns *Namespace) {
	for range 40 {
		out, _ := exec.Command("ip", "netns", "pids", ns.Name).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			_ = exec.Command("kill", p).Run()
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := ns.delete(); err != nil {
		t.Errorf("%v", err)
	}
}
