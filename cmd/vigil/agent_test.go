package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/calibrate"
)

const agentToken = "agent-test-token"

// agentProc is one `vigil agent` process of the test.
type agentProc struct {
	args []string
	api  string
	cmd  *exec.Cmd
	log  *os.File
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// buildVigil builds the binary under test.
func buildVigil(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vigil")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func (p *agentProc) start(t *testing.T, bin string) {
	t.Helper()
	p.cmd = exec.Command(bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (p *agentProc) stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
		p.cmd = nil
	}
}

var testClient = &http.Client{Timeout: 15 * time.Second}

func request(method, url, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+agentToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

type stateAnswer struct {
	Index uint64 `json:"index"`
	Data  struct {
		Index    uint64 `json:"index"`
		Document struct {
			Checks []struct {
				ID string `json:"id"`
			} `json:"checks"`
		} `json:"document"`
	} `json:"data"`
}

func readAgentState(api string) (*stateAnswer, error) {
	code, out, err := request("GET", api+"/v1/state", "")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", code, out)
	}
	var s stateAnswer
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// waitUntil waits until cond holds, for within on an idle machine scaled by the slowdown
// measured meanwhile (internal/calibrate).
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	m := calibrate.Start()
	defer m.Stop()
	for !cond() {
		if !m.Within(within) {
			t.Fatalf("timed out after %v of an idle machine (%v) waiting for %s", within, m.Reading(), what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAgentKill9: three `vigil agent` processes; the leader is killed with SIGKILL in the
// middle of a stream of writes and restarted from its data directory: every acknowledged
// write is there, and the index it serves never goes backwards.
func TestAgentKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	bin := buildVigil(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# write tokens\n"+agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	procs := make([]*agentProc, 3)
	for i := range procs {
		api := freePort(t)
		p := &agentProc{api: "http://" + api}
		p.args = []string{"agent", "-roles", "control", "-id", fmt.Sprintf("a%d", i),
			"-data-dir", filepath.Join(dir, fmt.Sprintf("a%d", i)), "-raft-addr", freePort(t),
			"-api-addr", api, "-token-file", tokens, "-open-reads", "-log-level", "warn"}
		if i == 0 {
			p.args = append(p.args, "-bootstrap")
		} else {
			// The bootstrap voter generated the cluster's raft secret in its data directory;
			// the others are given a copy, as an operator would.
			p.args = append(p.args, "-join", procs[0].api,
				"-raft-secret-file", filepath.Join(dir, "a0", "control", "raft-secret"))
		}
		var err error
		if p.log, err = os.Create(filepath.Join(dir, fmt.Sprintf("a%d.log", i))); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
		defer p.stop()
	}
	defer func() {
		if t.Failed() {
			for i, p := range procs {
				b, _ := os.ReadFile(p.log.Name())
				t.Logf("--- agent a%d log (last 3000 bytes):\n%s", i, tail(b, 3000))
			}
		}
	}()
	procs[0].start(t, bin)
	waitUntil(t, 20*time.Second, "the first voter to lead", func() bool {
		code, _, err := request("PUT", procs[0].api+"/v1/document", `{"regions": ["us-east", "eu-west", "sa-east"]}`)
		return err == nil && code == http.StatusOK
	})
	procs[1].start(t, bin)
	procs[2].start(t, bin)
	waitUntil(t, 30*time.Second, "three voters", func() bool {
		code, out, err := request("GET", procs[0].api+"/v1/cluster", "")
		var cv struct {
			Servers map[string]string `json:"servers"`
			APIs    map[string]string `json:"apis"`
		}
		return err == nil && code == 200 && json.Unmarshal(out, &cv) == nil && len(cv.Servers) == 3 && len(cv.APIs) == 3
	})

	// The victim is the leader: the hardest case for acknowledged writes.
	var victim *agentProc
	waitUntil(t, 10*time.Second, "a known leader", func() bool {
		_, out, err := request("GET", procs[2].api+"/v1/cluster", "")
		var cv struct {
			Leader string `json:"leader"`
		}
		if err != nil || json.Unmarshal(out, &cv) != nil || len(cv.Leader) != 2 || cv.Leader[1] < '0' || cv.Leader[1] > '2' {
			return false
		}
		victim = procs[cv.Leader[1]-'0']
		return true
	})
	var (
		mu      sync.Mutex
		acked   = map[string]bool{}
		stop    = make(chan struct{})
		written = make(chan int, 1000)
	)
	go func() { // the stream of writes, to every voter in turn, retried elsewhere on failure
		defer close(written)
		for i := 0; i < 2000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("c%04d", i)
			body := fmt.Sprintf(`{"id": %q, "protocol": "tcp", "target": {"host": "127.0.0.1", "port": %d}}`, id, 1000+i)
			for try := 0; try < 30; try++ {
				code, _, err := request("POST", procs[(i+try)%3].api+"/v1/checks", body)
				if err == nil && code == http.StatusCreated {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
					break
				}
				if err == nil && code == http.StatusConflict {
					break // applied by an attempt whose answer was lost: present, not acknowledged
				}
				time.Sleep(100 * time.Millisecond)
			}
			written <- i
		}
	}()
	countAcked := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }

	var lastBefore uint64
	waitUntil(t, 60*time.Second, "30 acknowledged writes", func() bool {
		if s, err := readAgentState(victim.api); err == nil && s.Index > lastBefore {
			lastBefore = s.Index
		}
		return countAcked() >= 30
	})
	if err := victim.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	victim.cmd.Wait()
	victim.cmd = nil
	before := countAcked()
	waitUntil(t, 60*time.Second, "20 more acknowledged writes with a voter down", func() bool { return countAcked() >= before+20 })
	victim.start(t, bin)
	seen := lastBefore
	waitUntil(t, 60*time.Second, "the restarted voter to answer", func() bool {
		s, err := readAgentState(victim.api)
		if err != nil {
			return false
		}
		if s.Index < seen {
			t.Fatalf("index went backwards on the restarted voter: %d after %d", s.Index, seen)
		}
		seen = s.Index
		return true
	})
	after := countAcked()
	waitUntil(t, 60*time.Second, "10 more acknowledged writes after the restart", func() bool { return countAcked() >= after+10 })
	close(stop)
	for range written {
	}
	mu.Lock()
	want := len(acked)
	ids := make([]string, 0, want)
	for id := range acked {
		ids = append(ids, id)
	}
	mu.Unlock()

	// Every acknowledged write, on every voter, the restarted one included.
	for _, p := range procs {
		var missing []string
		waitUntil(t, 30*time.Second, "every acknowledged write on "+p.api, func() bool {
			s, err := readAgentState(p.api)
			if err != nil {
				return false
			}
			if p == victim {
				if s.Index < seen {
					t.Fatalf("index went backwards on the restarted voter: %d after %d", s.Index, seen)
				}
				seen = s.Index
			}
			have := map[string]bool{}
			for _, c := range s.Data.Document.Checks {
				have[c.ID] = true
			}
			missing = missing[:0]
			for _, id := range ids {
				if !have[id] {
					missing = append(missing, id)
				}
			}
			return len(missing) == 0
		})
	}
	t.Logf("%d acknowledged writes; voter killed after %d, restarted after %d; last index before the kill %d, at the end %d", want, before, after, lastBefore, seen)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// TestAgentSurvivesHangup sends SIGHUP to a running voter, as an operator used to reloading
// Consul or Prometheus would: the agent must keep serving and say in its log what a reload
// needs, instead of exiting (which systemd would count as a clean stop and not restart).
func TestAgentSurvivesHangup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a process")
	}
	bin := buildVigil(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := freePort(t)
	p := &agentProc{api: "http://" + api, args: []string{"agent", "-roles", "control", "-id", "h0",
		"-data-dir", filepath.Join(dir, "h0"), "-raft-addr", freePort(t), "-api-addr", api,
		"-token-file", tokens, "-open-reads", "-bootstrap"}}
	var err error
	if p.log, err = os.Create(filepath.Join(dir, "h0.log")); err != nil {
		t.Fatal(err)
	}
	p.start(t, bin)
	defer p.stop()
	const within = 20 * time.Second
	waitUntil(t, within, "the voter to lead", func() bool {
		code, _, err := request("GET", p.api+"/v1/cluster", "")
		return err == nil && code == http.StatusOK
	})
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, within, "the warning about SIGHUP in the log", func() bool {
		b, _ := os.ReadFile(p.log.Name())
		return strings.Contains(string(b), "SIGHUP ignored")
	})
	select {
	case err := <-exited:
		b, _ := os.ReadFile(p.log.Name())
		t.Fatalf("the agent exited on SIGHUP (%v):\n%s", err, tail(b, 2000))
	default:
	}
	if code, _, err := request("GET", p.api+"/v1/cluster", ""); err != nil || code != http.StatusOK {
		t.Fatalf("after SIGHUP: /v1/cluster answered %d, %v", code, err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-exited
	}
	p.cmd = nil
}
