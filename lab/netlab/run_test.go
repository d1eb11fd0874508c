package netlab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/lab/sim"
)

// helperEnv, when set, makes the test binary run a network until it is killed (see
// TestHarnessKilled); helperBinEnv names the vigil binary.
const (
	helperEnv    = "NETLAB_TEST_HELPER"
	helperBinEnv = "NETLAB_TEST_HELPER_BIN"
)

// helperMain runs a network with a long hold, printing its timeline, until killed.
func helperMain() int {
	sc, err := sim.ParseScript("helper", strings.NewReader("hold 10m\n"), DefaultRegions())
	if err == nil {
		_, err = Run(context.Background(), Options{Script: sc, Binary: os.Getenv(helperBinEnv), Timeline: os.Stdout})
	}
	fmt.Println(err)
	return 1
}

// signalWriter passes writes on to w and closes ready at the first line that holds mark.
type signalWriter struct {
	w     io.Writer
	mark  string
	once  sync.Once
	ready chan struct{}
}

func (s *signalWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), s.mark) {
		s.once.Do(func() { close(s.ready) })
	}
	return s.w.Write(p)
}

// procsRunning returns the pids of processes whose executable is bin.
func procsRunning(bin string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			out = append(out, pid)
		}
	}
	return out
}

func TestSweepRemovesDeadRuns(t *testing.T) {
	needReal(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pid := dead.Process.Pid
	if alive(pid) {
		t.Skipf("pid %d was reused at once", pid)
	}
	stale := fmt.Sprintf("%s%d-swept", namePrefix, pid)
	live := testPrefix() + "live"
	for _, ns := range []string{stale, live} {
		if err := ipCmd(t.Context(), "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
	}
	defer ipCmd(context.Background(), "netns", "del", live)
	defer ipCmd(context.Background(), "netns", "del", stale)
	// A process left in the dead run's namespace, as a run killed before Pdeathsig existed
	// would leave one.
	sleeper := exec.Command("ip", "netns", "exec", stale, "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-run-", namePrefix, pid))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	removed, err := Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, "namespace "+stale) || !slices.Contains(removed, "directory "+dir) {
		t.Errorf("removed %q: want the namespace %s and the directory %s", removed, stale, dir)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("the process in the dead run's namespace still runs")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory %s: %v", dir, err)
	}
	if left := leftovers(t, testPrefix()); !slices.Equal(left, []string{"namespace " + live}) {
		t.Errorf("the live run's namespace: %q", left)
	}
}

// TestHarnessKilled kills a harness with SIGKILL while its network runs: the kernel ends
// every process it started (Pdeathsig), and the next sweep removes its namespaces.
func TestHarnessKilled(t *testing.T) {
	needReal(t)
	bin := vigilBinary(t, "")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), helperEnv+"=1", helperBinEnv+"="+bin)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "ready in") {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the harness ended before its network was ready")
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the harness's network was not ready within 3 minutes")
	}
	prefix := fmt.Sprintf("%s%d-", namePrefix, child.Process.Pid)
	before := procsRunning(bin)
	if len(before) < 15 {
		t.Errorf("%d processes run %s, want 15 (3 voters, per region 2 checkers, a location, a target)", len(before), bin)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(procsRunning(bin)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := procsRunning(bin); len(left) > 0 {
		t.Errorf("processes %v outlived the harness", left)
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if len(leftovers(t, prefix)) == 0 {
		t.Error("no namespace left by the killed harness: nothing for the sweeper to do, nothing tested")
	}
	if _, err := Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, prefix); len(left) > 0 {
		t.Errorf("after the sweep: %q", left)
	}
}

// TestInterruptedRunCleansUp ends a run's context while its network runs: Run returns
// after removing every process, namespace and its directory.
func TestInterruptedRunCleansUp(t *testing.T) {
	needReal(t)
	bin := vigilBinary(t, "")
	sc, err := sim.ParseScript("interrupted", strings.NewReader("hold 10m\n"), DefaultRegions())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var tl strings.Builder
	sw := &signalWriter{w: &tl, mark: "ready in", ready: make(chan struct{})}
	go func() {
		select {
		case <-sw.ready:
			time.Sleep(2 * time.Second)
			cancel()
		case <-ctx.Done():
		}
	}()
	res, err := Run(ctx, Options{Script: sc, Binary: bin, Timeline: sw})
	if err == nil {
		t.Fatal("an interrupted run returned no error")
	}
	if res.Run.Start.IsZero() || len(res.Run.Queries) == 0 {
		t.Errorf("the run was interrupted before it was ready (%v):\n%s", err, tl.String())
	}
	if left := procsRunning(bin); len(left) > 0 {
		t.Errorf("processes %v outlived the run", left)
	}
	if left := leftovers(t, testPrefix()); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), testPrefix()+"run-*"))
	if len(dirs) > 0 {
		t.Errorf("run directories left behind: %q", dirs)
	}
}
