package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

var (
	killRounds = flag.Int("kill-rounds", 16, "TestKillRestartVoter: voters killed and restarted, at most")
	killFor    = flag.Duration("kill-for", 4*time.Minute, "TestKillRestartVoter: no round starts after this")
	killStore  = flag.String("kill-store", "", "TestKillRestartVoter: -raft-log-store of the voters (empty: the default)")
	killBinary = flag.String("kill-binary", "", "TestKillRestartVoter: the vigil binary (default: built from ./cmd/vigil)")
)

// killVoter is one `vigil agent -roles control` process of TestKillRestartVoter.
type killVoter struct {
	id, dir, raft, api string
	args               []string
	log                string // its stderr and stdout, appended across restarts
	cmd                *exec.Cmd
	exited             chan struct{}
	err                error // of the process, once exited is closed
}

func (v *killVoter) start(t *testing.T, bin string) {
	t.Helper()
	out, err := os.OpenFile(v.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(out, "==== start %s\n", time.Now().Format(time.RFC3339Nano))
	v.cmd = exec.Command(bin, v.args...)
	v.cmd.Stdout, v.cmd.Stderr = out, out
	if err := v.cmd.Start(); err != nil {
		out.Close()
		t.Fatal(err)
	}
	v.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		v.err = cmd.Wait()
		out.Close()
		close(exited)
	}(v.cmd, v.exited)
}

// kill sends SIGKILL and waits for the process to be gone.
func (v *killVoter) kill() {
	if v.cmd == nil || v.cmd.Process == nil {
		return
	}
	select {
	case <-v.exited:
		return
	default:
	}
	_ = v.cmd.Process.Signal(syscall.SIGKILL)
	<-v.exited
}

func (v *killVoter) logTail() string {
	b, _ := os.ReadFile(v.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// killCluster is what /v1/cluster answers.
type killCluster struct {
	ID      string            `json:"id"`
	Leader  string            `json:"leader"`
	Ready   bool              `json:"ready"`
	Servers map[string]string `json:"servers"`
	Raft    map[string]string `json:"raft"`
}

func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// TestKillRestartVoter: three voters, real `vigil agent -roles control` processes with the
// flags an operator gives (-raft-log-store as -kill-store says; empty: the default), take
// writes from four clients without pause; each round, at a random moment, the leader (even
// rounds) or the voter killed the round before (odd rounds: it has just had its log's end
// rewritten by the new leader) is killed with SIGKILL and restarted on the same data
// directory. Every restart must come back (answer /v1/cluster with a leader, its process
// alive) within a bound scaled by the machine's slowdown measured meanwhile, and at the end
// every write acknowledged (2xx) to a client is held by every voter: a crash loses nothing.
// Bounded by -kill-rounds and -kill-for. With -kill-store wal (hashicorp/raft-wal v0.4.0) it
// fails: a voter restarted after its log's end was rewritten cannot start ("sealed segment
// has no index block").
func TestKillRestartVoter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills processes for minutes")
	}
	meter := calibrate.Start()
	defer meter.Stop()
	work := t.TempDir()
	bin := *killBinary
	if bin == "" {
		bin = filepath.Join(work, "vigil")
		build := exec.Command("go", "build", "-o", bin, "../cmd/vigil")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	const token = "walsafe-kill-token"
	tokenFile := filepath.Join(work, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	voters := make([]*killVoter, 3)
	// Each voter's process binds its ports again at every restart, long after they were
	// chosen: on a loopback address of their own, no other process's outgoing connection
	// (whose source is 127.0.0.1) can take one in between.
	host := fmt.Sprintf("127.%d.%d.", 1+rand.IntN(250), 1+rand.IntN(250))
	for i := range voters {
		ip := host + strconv.Itoa(1+i)
		v := &killVoter{id: fmt.Sprintf("v%d", i), dir: filepath.Join(work, fmt.Sprintf("v%d", i)),
			raft: freeAddrOn(t, ip), api: freeAddrOn(t, ip), log: filepath.Join(work, fmt.Sprintf("v%d.log", i))}
		v.args = []string{"agent", "-roles", "control", "-id", v.id, "-data-dir", v.dir, "-raft-addr", v.raft,
			"-api-addr", v.api, "-token-file", tokenFile, "-open-reads", "-log-level", "warn"}
		if i == 0 {
			v.args = append(v.args, "-bootstrap")
		} else {
			v.args = append(v.args, "-join", "http://"+voters[0].api,
				"-raft-secret-file", filepath.Join(voters[0].dir, "control", "raft-secret"))
		}
		if *killStore != "" {
			v.args = append(v.args, "-raft-log-store", *killStore)
		}
		voters[i] = v
	}
	t.Cleanup(func() {
		for _, v := range voters {
			v.kill()
		}
	})
	ctx := t.Context()

	// ready waits for v to answer /v1/cluster ready, with a leader and n servers, its process
	// alive.
	ready := func(v *killVoter, n int, idle time.Duration) (killCluster, error) {
		from := time.Now()
		for {
			var c killCluster
			err := getJSON(ctx, "http://"+v.api+"/v1/cluster", &c)
			if err == nil && c.Ready && c.Leader != "" && len(c.Servers) == n {
				return c, nil
			}
			select {
			case <-v.exited:
				return c, fmt.Errorf("%s exited (%v) instead of starting; its log ends:\n%s", v.id, v.err, v.logTail())
			case <-ctx.Done():
				return c, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			if bound := meter.Since(from).Scale(idle); time.Since(from) > bound {
				return c, fmt.Errorf("%s did not rejoin within %v (scaled from %v by the slowdown measured): last answer %+v, %v; its log ends:\n%s",
					v.id, bound.Round(time.Millisecond), idle, c, err, v.logTail())
			}
		}
	}
	// The writes acknowledged to the writers, below.
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		sent  int
		wg    sync.WaitGroup
	)
	// newLeader waits for the voters other than gone to elect one of them and apply writes
	// after it.
	newLeader := func(gone *killVoter) error {
		from := time.Now()
		idle := 20 * time.Second
		for {
			for _, v := range voters {
				var c killCluster
				if v == gone || getJSON(ctx, "http://"+v.api+"/v1/cluster", &c) != nil || c.Leader == "" || c.Leader == gone.id {
					continue
				}
				mu.Lock()
				n := len(acked)
				mu.Unlock()
				for wait := time.Now(); time.Since(wait) < meter.Since(from).Scale(2*time.Second); time.Sleep(20 * time.Millisecond) {
					mu.Lock()
					more := len(acked) - n
					mu.Unlock()
					if more >= 20 {
						break
					}
				}
				return nil
			}
			if bound := meter.Since(from).Scale(idle); time.Since(from) > bound {
				return fmt.Errorf("the voters other than %s elected no leader within %v", gone.id, bound.Round(time.Millisecond))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, v := range voters {
		v.start(t, bin)
		if _, err := ready(v, i+1, 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	// The writers: four clients, each writing new checks in turn to the voters (a voter
	// forwards to the leader), recording those acknowledged.
	wctx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	clients := make([]*client.Client, len(voters))
	for i, v := range voters {
		var err error
		if clients[i], err = client.New(client.Config{Voters: []string{"http://" + v.api}, Token: token, HTTP: &http.Client{Timeout: 5 * time.Second}}); err != nil {
			t.Fatal(err)
		}
	}
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; wctx.Err() == nil; i++ {
				id := fmt.Sprintf("kill-%d-%d", c, i)
				body := fmt.Sprintf(`{"protocol": "tcp", "target": {"host": "127.0.0.1", "port": %d}}`, 1+(c<<20+i)%60000)
				_, err := clients[(c+i)%len(voters)].PutCheck(wctx, id, json.RawMessage(body))
				mu.Lock()
				sent++
				if err == nil {
					acked[id] = true
				}
				mu.Unlock()
				if err != nil {
					select { // a voter down: try the next at once, but do not spin
					case <-wctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
	}

	var victim *killVoter
	started := time.Now()
	rounds := 0
	for ; rounds < *killRounds && time.Since(started) < *killFor; rounds++ {
		if rounds%2 == 0 || victim == nil {
			var c killCluster
			if err := getJSON(ctx, "http://"+voters[0].api+"/v1/cluster", &c); err != nil || c.Leader == "" {
				if err := getJSON(ctx, "http://"+voters[1].api+"/v1/cluster", &c); err != nil {
					t.Fatalf("round %d: no voter says who leads: %v", rounds, err)
				}
			}
			victim = nil
			for _, v := range voters {
				if v.id == c.Leader {
					victim = v
				}
			}
			if victim == nil {
				t.Fatalf("round %d: leader %q is none of the voters", rounds, c.Leader)
			}
		}
		mu.Lock()
		before := len(acked)
		mu.Unlock()
		time.Sleep(time.Duration(50+rand.IntN(1500)) * time.Millisecond)
		victim.kill()
		mu.Lock()
		during := len(acked) - before
		mu.Unlock()
		// As a supervisor's restart would, after the other voters elected a leader and took
		// writes: the victim's log may end in entries it wrote and no one else did, which
		// the new leader's replace.
		if err := newLeader(victim); err != nil {
			t.Fatalf("round %d: %v", rounds, err)
		}
		victim.start(t, bin)
		c, err := ready(victim, len(voters), 20*time.Second)
		if err != nil {
			t.Fatalf("round %d (killed %s, %d writes acknowledged in the round before the kill, store %q): %v",
				rounds, victim.id, during, *killStore, err)
		}
		t.Logf("round %d: killed %s after %d acknowledged writes, restarted; leader %s, its log %s..%s",
			rounds, victim.id, during, c.Leader, c.Raft["last_snapshot_index"], c.Raft["last_log_index"])
	}
	stopWriters()
	wg.Wait()
	if rounds == 0 {
		t.Fatal("no round ran within -kill-for")
	}

	// Every voter holds every acknowledged write once it has applied the leader's commit.
	mu.Lock()
	suffixes := 0
	for _, v := range voters {
		b, _ := os.ReadFile(v.log)
		suffixes += bytes.Count(b, []byte("clearing log suffix"))
	}
	t.Logf("%d rounds in %v; %d writes sent, %d acknowledged; raft deleted a suffix of a restarted voter's log %d times",
		rounds, time.Since(started).Round(time.Second), sent, len(acked), suffixes)
	mu.Unlock()
	var lead killCluster
	if err := getJSON(ctx, "http://"+voters[0].api+"/v1/cluster", &lead); err != nil {
		t.Fatal(err)
	}
	for _, v := range voters {
		from := time.Now()
		var missing []string
		for {
			var list struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			err := getJSON(ctx, "http://"+v.api+"/v1/checks", &list) // 503 until it has caught up
			held := map[string]bool{}
			for _, c := range list.Data {
				held[c.ID] = true
			}
			missing = missing[:0]
			for id := range acked {
				if !held[id] {
					missing = append(missing, id)
				}
			}
			if err == nil && len(missing) == 0 {
				break
			}
			if bound := meter.Since(from).Scale(10 * time.Second); time.Since(from) > bound {
				t.Errorf("%s lacks %d of the %d acknowledged writes after %v (e.g. %v; last read: %v)", v.id, len(missing), len(acked),
					bound.Round(time.Millisecond), missing[:min(5, len(missing))], err)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var errs []error
	for _, v := range voters {
		if b, _ := os.ReadFile(v.log); bytes.Contains(b, []byte("panic:")) {
			errs = append(errs, fmt.Errorf("%s panicked:\n%s", v.id, v.logTail()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}
