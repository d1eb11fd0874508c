package netlab

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Process kinds.
const (
	KindVoter    = "voter"
	KindChecker  = "checker"
	KindLocation = "location"
	KindTarget   = "target"
)

// Proc is one process of the network: a `vigil agent` or `vigil target` in its region's
// namespace. It is started through `ip netns exec` (which execs the binary: the pid is the
// binary's), in a process group of its own, and killed by the kernel if the harness dies
// (Pdeathsig). Its output goes to a log file kept across restarts.
type Proc struct {
	// ID is the node's ID ("voter-1", "us-east-location", "us-east-checker-2") or the
	// target's name ("us-east-target").
	ID string
	// Kind is KindVoter, KindChecker, KindLocation or KindTarget.
	Kind string
	// Region is the region the process runs in.
	Region *Region
	// Addrs are the addresses it serves, by name: "dns", "http", "gossip", "api", "raft".
	Addrs map[string]string

	args  []string
	log   string
	bin   string
	spawn *spawner

	mu        sync.Mutex
	cmd       *exec.Cmd
	exited    chan struct{}
	killed    bool     // the harness ended it: its exit is expected
	unplanned []string // exits the harness did not ask for
	starts    int
}

// start runs the process.
func (p *Proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("netlab: %s is running", p.ID)
	}
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("netlab: %s: %w", p.ID, err)
	}
	fmt.Fprintf(logf, "=== netlab: start %d at %s\n", p.starts+1, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command("ip", append([]string{"netns", "exec", p.Region.NS.Name, p.bin}, p.args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.spawn.start(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("netlab: start %s: %w", p.ID, err)
	}
	p.cmd, p.killed, p.exited = cmd, false, make(chan struct{})
	p.starts++
	exited := p.exited
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		if !p.killed {
			p.unplanned = append(p.unplanned, fmt.Sprintf("%s exited on its own at %s: %v", p.ID, time.Now().UTC().Format(time.RFC3339Nano), err))
		}
		p.cmd = nil
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// spawner starts processes from one OS thread that lives as long as the run. The kernel
// sends a child its Pdeathsig when the thread that forked it ends, and Go ends the thread of
// a goroutine that exits while locked to it (as the namespace goroutines of Namespace.Do
// do, on whatever thread they happened to run): a child forked from an ordinary goroutine
// could be killed at any moment. When the spawner closes, its thread ends, and with it any
// child still running.
type spawner struct {
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the spawner
		for req := range s.reqs {
			req.errc <- req.cmd.Start()
		}
	}()
	return s
}

// start starts cmd from the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, errc: errc}
	return <-errc
}

// close ends the spawner's thread (and, by Pdeathsig, every child it started that still
// runs). No start may follow.
func (s *spawner) close() { close(s.reqs) }

// kill ends the process and its group with SIGKILL and waits until it is reaped.
func (p *Proc) kill() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if cmd == nil {
		p.mu.Unlock()
		return fmt.Errorf("netlab: %s is not running", p.ID)
	}
	p.killed = true
	p.mu.Unlock()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("netlab: kill %s: %w", p.ID, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("netlab: %s did not end within 10s of SIGKILL", p.ID)
	}
}

// running reports whether the process runs.
func (p *Proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// pid returns the process's pid, 0 when it does not run.
func (p *Proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// problems returns the exits the harness did not cause.
func (p *Proc) problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.unplanned...)
}

// tail returns up to n bytes of the end of the process's log.
func (p *Proc) tail(n int64) string {
	f, err := os.Open(p.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}
