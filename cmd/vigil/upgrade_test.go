package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// previousRelease is the commit of the release before this one (CHANGELOG.md): the build a
// running network is upgraded from.
const previousRelease = "963239e"

// buildAt builds cmd/vigil of commit rev of the repository at root, from a `git archive` of
// it (no work tree, no change to the repository).
func buildAt(t *testing.T, root, rev string) string {
	t.Helper()
	if err := exec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s is not in this clone (a shallow clone?): no previous build to upgrade from", rev)
	}
	src := t.TempDir()
	archive := exec.Command("bash", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", root, rev, src))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, out)
	}
	bin := filepath.Join(t.TempDir(), "vigil-"+rev)
	// The release's settings (release_test.go builds with them too): the packages that did not
	// change since rev come from the build cache, whatever directory they are built from.
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-X main.version="+rev, "-o", bin, "./cmd/vigil")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build of %s: %v\n%s", rev, err, out)
	}
	return bin
}

// TestRollingUpgrade runs a network of the previous release (three voters, two locations),
// lets it write its data directories (raft log, snapshots, configuration copies), then rolls
// every node to this build, one at a time: locations first, then voters, followers before
// the leader, each restarted on its own data directory with its own command line. Meanwhile
// a stream of writes goes to the voters and DNS queries go to both locations: every
// acknowledged write is on every voter at the end, and at every moment one location or the
// other answered the record correctly; no location answered it wrongly.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two releases and runs processes")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: the previous release is built from its commit")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	oldBin, newBin := buildAt(t, root, previousRelease), buildVigil(t)
	t.Logf("built %s and this tree in %v", previousRelease, time.Since(start).Round(time.Millisecond))

	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	voters := make([]*agentProc, 3)
	var apis []string
	for i := range voters {
		api := freePort(t)
		apis = append(apis, "http://"+api)
		p := &agentProc{api: "http://" + api}
		p.args = []string{"agent", "-roles", "control", "-id", fmt.Sprintf("v%d", i),
			"-data-dir", filepath.Join(dir, fmt.Sprintf("v%d", i)), "-raft-addr", freePort(t),
			"-api-addr", api, "-token-file", tokens, "-open-reads", "-log-level", "warn"}
		if i == 0 {
			p.args = append(p.args, "-bootstrap")
		} else {
			p.args = append(p.args, "-join", apis[0], "-raft-secret-file", filepath.Join(dir, "v0", "control", "raft-secret"))
		}
		voters[i] = p
	}
	gossip := []string{freePort(t), freePort(t)}
	locations := make([]*agentProc, 2)
	dnsAddrs := make([]string, 2)
	for i := range locations {
		dnsAddrs[i] = freePort(t)
		locations[i] = &agentProc{args: []string{"agent", "-roles", "location", "-id", fmt.Sprintf("l%d", i), "-region", "us-east",
			"-data-dir", filepath.Join(dir, fmt.Sprintf("l%d", i)), "-control", strings.Join(apis, ","),
			"-gossip-bind", gossip[i], "-insecure-gossip", "-join", gossip[1-i],
			"-dns", dnsAddrs[i], "-http", freePort(t), "-log-level", "warn"}}
	}
	all := append(append([]*agentProc{}, voters...), locations...)
	for i, p := range all {
		if p.log, err = os.Create(filepath.Join(dir, fmt.Sprintf("node%d.log", i))); err != nil {
			t.Fatal(err)
		}
		defer p.stop()
	}
	defer func() {
		if t.Failed() {
			for i, p := range all {
				b, _ := os.ReadFile(p.log.Name())
				t.Logf("--- node %d (%s) log (last 2000 bytes):\n%s", i, strings.Join(p.args[:5], " "), tail(b, 2000))
			}
		}
	}()

	// The previous release's network, with a document and a record to answer.
	voters[0].start(t, oldBin)
	doc := `{"regions": ["us-east", "eu-west", "sa-east"], "zones": [{"name": "upgrade.vigil.test",
		"record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.7"}]}]}]}`
	waitUntil(t, 30*time.Second, "the first voter to take the document", func() bool {
		code, _, err := request("PUT", apis[0]+"/v1/document", doc)
		return err == nil && code == http.StatusOK
	})
	voters[1].start(t, oldBin)
	voters[2].start(t, oldBin)
	waitUntil(t, 60*time.Second, "three voters", func() bool { return len(clusterServers(apis[0])) == 3 })
	for _, l := range locations {
		l.start(t, oldBin)
	}
	for i := range locations {
		waitUntil(t, 60*time.Second, "location l"+fmt.Sprint(i)+" to answer", func() bool { return askWWW(dnsAddrs[i]) == "ok" })
	}

	// The stream of writes (checks, to every voter in turn, retried elsewhere) and of queries.
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	countAcked := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 5000; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			id := fmt.Sprintf("c%04d", i)
			body := fmt.Sprintf(`{"id": %q, "protocol": "tcp", "target": {"host": "127.0.0.1", "port": %d}}`, id, 1000+i)
			for try := 0; try < 100; try++ {
				code, _, err := request("POST", apis[(i+try)%3]+"/v1/checks", body)
				if err == nil && code == http.StatusCreated {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
					break
				}
				if err == nil && code == http.StatusConflict {
					break // applied by an attempt whose answer was lost
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	var rounds, lost, wrong atomic.Int64
	var wrongSeen atomic.Value
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			rounds.Add(1)
			answered := false
			for _, a := range dnsAddrs {
				switch r := askWWW(a); {
				case r == "ok":
					answered = true
				case strings.HasPrefix(r, "wrong"):
					wrong.Add(1)
					wrongSeen.Store(a + ": " + r)
				}
			}
			if !answered {
				lost.Add(1)
			}
		}
	}()

	// Roll: locations, then the voters, followers first and the leader last.
	more := func(n int, what string) {
		t.Helper()
		from := countAcked()
		waitUntil(t, 60*time.Second, fmt.Sprintf("%d more acknowledged writes %s", n, what), func() bool { return countAcked() >= from+n })
	}
	more(20, "before the upgrade")
	for i, l := range locations {
		l.stop()
		l.start(t, newBin)
		waitUntil(t, 60*time.Second, fmt.Sprintf("upgraded location l%d to answer", i), func() bool { return askWWW(dnsAddrs[i]) == "ok" })
		more(10, fmt.Sprintf("after location l%d", i))
	}
	var leader string
	waitUntil(t, 30*time.Second, "a known leader", func() bool {
		leader = clusterLeader(apis[0])
		return len(leader) == 2
	})
	order := []int{}
	for i := range voters {
		if fmt.Sprintf("v%d", i) != leader {
			order = append(order, i)
		}
	}
	if len(order) != 2 {
		t.Fatalf("leader %q is none of the voters", leader)
	}
	order = append(order, int(leader[1]-'0'))
	for _, i := range order {
		before, err := readAgentState(apis[i])
		if err != nil {
			t.Fatalf("voter v%d before its upgrade: %v", i, err)
		}
		voters[i].stop()
		voters[i].start(t, newBin)
		waitUntil(t, 60*time.Second, fmt.Sprintf("upgraded voter v%d to serve its state again", i), func() bool {
			s, err := readAgentState(apis[i])
			return err == nil && s.Index >= before.Index
		})
		more(10, fmt.Sprintf("after voter v%d", i))
	}
	close(stop)
	wg.Wait()

	mu.Lock()
	ids := make([]string, 0, len(acked))
	for id := range acked {
		ids = append(ids, id)
	}
	mu.Unlock()
	for i := range voters {
		var missing []string
		waitUntil(t, 30*time.Second, fmt.Sprintf("every acknowledged write on voter v%d", i), func() bool {
			s, err := readAgentState(apis[i])
			if err != nil {
				return false
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
	if n := len(clusterServers(apis[0])); n != 3 {
		t.Errorf("%d voters after the upgrade, want 3", n)
	}
	if w := wrong.Load(); w > 0 {
		t.Errorf("%d wrong answers during the upgrade, e.g. %v", w, wrongSeen.Load())
	}
	if l := lost.Load(); l > 0 {
		t.Errorf("%d of %d query rounds found no location answering", l, rounds.Load())
	}
	t.Logf("%s to this build: %d acknowledged writes, %d query rounds to two locations, none without an answer; %v in all",
		previousRelease, len(ids), rounds.Load(), time.Since(start).Round(time.Millisecond))
}

// askWWW asks a location for www.upgrade.vigil.test: "ok" for the record, "wrong ..." for any
// other answer (REFUSED included: a location starts from its configuration copy), "no answer"
// when none came (a location restarting).
func askWWW(addr string) string {
	m := new(dns.Msg)
	m.SetQuestion("www.upgrade.vigil.test.", dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 500 * time.Millisecond}).Exchange(m, addr)
	switch {
	case err != nil:
		return "no answer"
	case len(r.Answer) == 1:
		if a, ok := r.Answer[0].(*dns.A); ok && a.A.String() == "192.0.2.7" {
			return "ok"
		}
	}
	return "wrong: " + strings.ReplaceAll(r.String(), "\n", " ")
}

// clusterServers returns the voters of the cluster a voter's API reports.
func clusterServers(api string) map[string]string {
	_, out, err := request("GET", api+"/v1/cluster", "")
	var cv struct {
		Servers map[string]string `json:"servers"`
	}
	if err != nil || json.Unmarshal(out, &cv) != nil {
		return nil
	}
	return cv.Servers
}

// clusterLeader returns the leader's ID a voter's API reports.
func clusterLeader(api string) string {
	_, out, err := request("GET", api+"/v1/cluster", "")
	var cv struct {
		Leader string `json:"leader"`
	}
	if err != nil || json.Unmarshal(out, &cv) != nil {
		return ""
	}
	return cv.Leader
}
