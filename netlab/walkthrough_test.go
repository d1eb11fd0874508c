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
)

// walkStep is one command of a walkthrough and what it prints.
type walkStep struct {
	line int      // the line of the document the command starts on
	cmd  string   // the command, continuation lines joined
	want []string // the lines it prints
}

// walkSteps returns the commands of a document's ```console blocks: a line "$ CMD" is a
// command (a line ending in a backslash continues on the next one), the lines after it up to
// the next command or the end of the block are what it prints.
func walkSteps(doc string) ([]walkStep, error) {
	var (
		steps        []walkStep
		block, contd bool
	)
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case !block && line == "```console":
			block = true
		case !block:
		case line == "```":
			if contd {
				return nil, fmt.Errorf("line %d: the block ends inside a command", i+1)
			}
			block = false
		case contd:
			s := &steps[len(steps)-1]
			l, more := strings.CutSuffix(line, "\\")
			s.cmd += " " + strings.TrimSpace(l)
			contd = more
		case strings.HasPrefix(line, "$ "):
			l, more := strings.CutSuffix(strings.TrimPrefix(line, "$ "), "\\")
			steps = append(steps, walkStep{line: i + 1, cmd: strings.TrimSpace(l)})
			contd = more
		case len(steps) == 0:
			return nil, fmt.Errorf("line %d: output before the first command of a block", i+1)
		default:
			s := &steps[len(steps)-1]
			s.want = append(s.want, line)
		}
	}
	if block {
		return nil, fmt.Errorf("a ```console block is not closed")
	}
	return steps, nil
}

// walkMatch reports whether got (a command's output) is what want says, line by line: "..."
// in a wanted line matches any text in the line, and a wanted line that is only "..." matches
// any number of lines, none included. Trailing spaces of got's lines do not count.
func walkMatch(got string, want []string) bool {
	got = strings.TrimRight(got, "\n")
	var lines []string
	if got != "" {
		lines = strings.Split(got, "\n")
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return matchLines(lines, want)
}

func matchLines(lines, want []string) bool {
	if len(want) == 0 {
		return len(lines) == 0
	}
	if want[0] == "..." {
		for skip := 0; skip <= len(lines); skip++ {
			if matchLines(lines[skip:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(lines) > 0 && matchLine(lines[0], want[0]) && matchLines(lines[1:], want[1:])
}

// matchLine matches one line against a wanted line whose "..." match any text.
func matchLine(line, want string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return line == want
	}
	rest, ok := strings.CutPrefix(line, parts[0])
	if !ok {
		return false
	}
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return len(rest) >= len(last) && strings.HasSuffix(rest, last)
}

// TestWalkMatch pins the walkthroughs' convention for expected output.
func TestWalkMatch(t *testing.T) {
	for _, c := range []struct {
		got  string
		want []string
		ok   bool
	}{
		{"a\nb\n", []string{"a", "b"}, true},
		{"a\nb\n", []string{"a"}, false},
		{"a\n", []string{"a", "b"}, false},
		{"a\nb\nc\n", []string{"a", "..."}, true},
		{"a\nb\nc\n", []string{"...", "c"}, true},
		{"a\nb\nc\n", []string{"a", "...", "b", "c"}, true},
		{"a\nb\nc\n", []string{"...", "b"}, false},
		{"web  healthy  3s ago  \n", []string{"web  healthy  ..."}, true},
		{"web  unhealthy  3s ago\n", []string{"web  healthy  ..."}, false},
		{"id 7f3a set until 12:00\n", []string{"id ... set until ..."}, true},
		{"id 7f3a cleared\n", []string{"id ... set until ..."}, false},
		{"1 alice x set_override\n", []string{"1 ...alice ...set_override"}, true},
		{"abc\n", []string{"ab...bc"}, false},
		{"abbc\n", []string{"ab...bc"}, true},
		{"", nil, true},
		{"x\n", nil, false},
	} {
		if got := walkMatch(c.got, c.want); got != c.ok {
			t.Errorf("walkMatch(%q, %q) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
	steps, err := walkSteps("text\n```console\n$ a \\\n    b\nout\n$ c\n```\n$ not a command\n")
	if err != nil || len(steps) != 2 || steps[0].cmd != "a b" || len(steps[0].want) != 1 || steps[1].cmd != "c" {
		t.Errorf("walkSteps = %+v, %v", steps, err)
	}
}

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
	doc, err := os.ReadFile("../docs/walkthroughs/three-regions.md")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := walkSteps(string(doc))
	if err != nil {
		t.Fatalf("three-regions.md: %v", err)
	}
	if len(steps) < 20 {
		t.Fatalf("three-regions.md: %d commands, expected the whole walkthrough", len(steps))
	}

	bin := vigilBinary(t, "")
	work := t.TempDir()
	examples, err := filepath.Abs("../examples")
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
		out, status, err := sh.run(i, s.cmd, 60*time.Second)
		if err != nil {
			t.Fatalf("three-regions.md:%d: $ %s\n%v; printed so far:\n%s\n%s", s.line, s.cmd, err, out, logTails(work))
		}
		failing := len(s.want) > 0 && strings.HasPrefix(s.want[0], "vigil ") && strings.Contains(s.want[0], ": ")
		if !walkMatch(out, s.want) || (status != 0 && !failing) {
			t.Fatalf("three-regions.md:%d: $ %s\nexit status %d, printed:\n%s\nthe document says:\n%s\n%s",
				s.line, s.cmd, status, out, strings.Join(s.want, "\n"), logTails(work))
		}
		t.Logf("$ %s  (%v)", s.cmd, time.Since(t0).Round(100*time.Millisecond))
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
