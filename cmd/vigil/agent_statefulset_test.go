package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Voters of a StatefulSet share one command line: -bootstrap-id makes the voter of that id
// bootstrap (and join nobody, but ask the voters' URLs first whether a cluster exists), the
// others join the voters' URLs; -raft-advertise reaches the control configuration as given.
func TestAgentBootstrapID(t *testing.T) {
	dir := t.TempDir()
	tokens, secret := filepath.Join(dir, "token"), filepath.Join(dir, "raft-secret")
	if err := os.WriteFile(tokens, []byte("w1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	urls := []string{"http://v-0.voters:7100", "http://v-1.voters:7100", "http://v-2.voters:7100"}
	base := agentFlags{roles: "control", dataDir: dir, raftAddr: "0.0.0.0:7000", apiAddr: "0.0.0.0:7100",
		tokenFile: tokens, raftSecretFile: secret, logLevel: "warn", bootstrapID: "v-0",
		join: strings.Join(urls, ","), bootstrapCheckWait: 5 * time.Second}
	for _, c := range []struct {
		id          string
		bootstrap   bool
		join, check []string
		wait        time.Duration
	}{
		{"v-0", true, nil, urls, 5 * time.Second},
		{"v-0", true, nil, nil, 0}, // -bootstrap-check-wait=0: no check
		{"v-1", false, urls, nil, 5 * time.Second},
		{"v-2", false, urls, nil, 5 * time.Second},
	} {
		f := base
		f.id, f.raftAdvertise, f.bootstrapCheckWait = c.id, c.id+".voters:7000", c.wait
		cfg, _, err := agentConfig(f, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		if cfg.Control.Bootstrap != c.bootstrap || !slices.Equal(cfg.Control.Join, c.join) {
			t.Errorf("%s: bootstrap %v, join %v; want %v, %v", c.id, cfg.Control.Bootstrap, cfg.Control.Join, c.bootstrap, c.join)
		}
		if !slices.Equal(cfg.Control.BootstrapCheck, c.check) || cfg.Control.BootstrapCheckWait != c.wait {
			t.Errorf("%s: bootstrap check %v for %v; want %v for %v", c.id, cfg.Control.BootstrapCheck, cfg.Control.BootstrapCheckWait, c.check, c.wait)
		}
		if cfg.Control.RaftAdvertise != f.raftAdvertise {
			t.Errorf("%s: raft advertise %q, want %q", c.id, cfg.Control.RaftAdvertise, f.raftAdvertise)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: validate: %v", c.id, err)
		}
	}
	f := base
	f.id, f.bootstrap = "v-1", true
	if _, _, err := agentConfig(f, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-bootstrap and -bootstrap-id") {
		t.Errorf("-bootstrap with -bootstrap-id: %v, want a refusal", err)
	}
}

// TestAgentStatefulSetVoters runs three voters as the Helm chart starts them: started
// together, one command line that differs only by the pod's name (here also its ports, all
// on one machine), -bootstrap-id naming the first, -join listing every voter, itself
// included, and -raft-advertise a DNS name. One cluster of three forms, its configuration
// holds the names, and a voter restarted on its data directory rejoins with every write.
func TestAgentStatefulSetVoters(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	bin := buildVigil(t)
	voters, urls, ps := statefulSetVoters(t)
	for _, v := range voters { // podManagementPolicy: Parallel
		v.start(t, bin)
	}
	var servers map[string]string
	waitUntil(t, 60*time.Second, "one cluster of three voters", func() bool {
		servers = clusterServers(urls[2])
		return len(servers) == 3
	})
	for i, p := range ps {
		if got, want := servers[fmt.Sprintf("vigil-voter-%d", i)], "localhost:"+p.raft; got != want {
			t.Errorf("voter %d's raft address in the cluster: %q, want the name %q", i, got, want)
		}
	}
	write := func(id string) {
		t.Helper()
		body := fmt.Sprintf(`{"id": %q, "protocol": "tcp", "target": {"host": "127.0.0.1", "port": 1}}`, id)
		waitUntil(t, 30*time.Second, "the write of "+id, func() bool {
			code, _, err := request("POST", urls[1]+"/v1/checks", body)
			return err == nil && (code == http.StatusCreated || code == http.StatusConflict)
		})
	}
	write("before")
	voters[0].stop() // the bootstrap voter restarts with the same command line: it neither bootstraps nor joins
	write("while-down")
	voters[0].start(t, bin)
	write("after")
	for i, u := range urls {
		waitUntil(t, 30*time.Second, fmt.Sprintf("the three writes on voter %d", i), func() bool {
			s, err := readAgentState(u)
			if err != nil {
				return false
			}
			n := 0
			for _, c := range s.Data.Document.Checks {
				if c.ID == "before" || c.ID == "while-down" || c.ID == "after" {
					n++
				}
			}
			return n == 3
		})
	}
	if n := len(clusterServers(urls[0])); n != 3 {
		t.Errorf("%d voters after the restart, want 3 (a second cluster?)", n)
	}
	leaders := map[string]bool{}
	for _, u := range urls {
		leaders[clusterLeader(u)] = true
	}
	if len(leaders) != 1 || leaders[""] {
		t.Errorf("leaders the voters report: %v, want one", leaders)
	}
	if b, _ := os.ReadFile(voters[0].log.Name()); bytes.Contains(b, []byte("a cluster exists at")) {
		t.Errorf("voter 0 found a cluster to join at its first start or its restart on its data directory:\n%s", tail(b, 2000))
	}
}

// TestAgentBootstrapVoterWiped: the voter that -bootstrap-id names loses its volume and
// starts again with the same command line while the two others run. It asks them first,
// finds their cluster and joins it: the same configuration of three, the writes made before,
// one leader. The control run skips the ask (-bootstrap-check-wait=0, the behaviour without
// it): the voter then starts a second cluster, of itself alone, which the test must see.
func TestAgentBootstrapVoterWiped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	bin := buildVigil(t)
	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprintf("check=%v", check), func(t *testing.T) {
			voters, urls, _ := statefulSetVoters(t)
			for _, v := range voters {
				v.start(t, bin)
			}
			waitUntil(t, 60*time.Second, "one cluster of three voters", func() bool {
				return len(clusterServers(urls[1])) == 3 && len(clusterServers(urls[2])) == 3
			})
			body := `{"id": "before", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": 1}}`
			waitUntil(t, 30*time.Second, "the write", func() bool {
				code, _, err := request("POST", urls[1]+"/v1/checks", body)
				return err == nil && (code == http.StatusCreated || code == http.StatusConflict)
			})
			voters[0].stop()
			dataDir := strings.TrimPrefix(voters[0].args[3], "-data-dir=")
			if err := os.RemoveAll(dataDir); err != nil {
				t.Fatal(err)
			}
			if !check {
				voters[0].args = append(voters[0].args, "-bootstrap-check-wait=0")
			}
			// From before voter 0 starts, its API is asked often whether its configuration holds
			// itself alone: a second cluster, beside the one of three that voters 1 and 2 hold.
			// Without the check it lasts until the running leader's replication reaches voter 0
			// (a fraction of a second here), which the polling must not miss.
			var alone atomic.Bool
			stop, polled := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(polled)
				for {
					if servers := clusterServers(urls[0]); len(servers) == 1 && servers["vigil-voter-0"] != "" {
						alone.Store(true)
					}
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()
			stopPolling := sync.OnceFunc(func() { close(stop); <-polled })
			t.Cleanup(stopPolling)
			voters[0].start(t, bin)
			if !check {
				waitUntil(t, 60*time.Second, "voter 0 in a cluster of its own", alone.Load)
				return
			}
			waitUntil(t, 60*time.Second, "voter 0 in the cluster of three, with the earlier write", func() bool {
				s, err := readAgentState(urls[0])
				return len(clusterServers(urls[0])) == 3 && err == nil && len(s.Data.Document.Checks) == 1
			})
			// One leader the three agree on, for a while.
			for range 20 {
				leaders := map[string]bool{}
				for _, u := range urls {
					leaders[clusterLeader(u)] = true
					if n := len(clusterServers(u)); n != 3 {
						t.Fatalf("%s: %d voters, want the 3 of the one cluster", u, n)
					}
				}
				if len(leaders) != 1 || leaders[""] {
					t.Fatalf("leaders the voters report: %v, want one", leaders)
				}
				time.Sleep(100 * time.Millisecond)
			}
			stopPolling()
			if alone.Load() {
				t.Error("voter 0 held a configuration of itself alone: a second cluster")
			}
			if log, _ := os.ReadFile(voters[0].log.Name()); !bytes.Contains(log, []byte("a cluster exists at")) {
				t.Error("voter 0 did not log that it joins the existing cluster")
			}
		})
	}
}

// statefulSetVoters makes (without starting them) three voters with the Helm chart's command
// line, their API URLs and ports; their logs are shown when the test fails.
func statefulSetVoters(t *testing.T, extra ...string) ([]*agentProc, []string, []voterPorts) {
	t.Helper()
	dir := t.TempDir()
	tokens, secret := filepath.Join(dir, "token"), filepath.Join(dir, "raft-secret")
	if err := os.WriteFile(tokens, []byte(agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ps []voterPorts
	var urls []string
	for range 3 {
		raft, api := freePort(t), freePort(t)
		_, rp, _ := net.SplitHostPort(raft)
		_, ap, _ := net.SplitHostPort(api)
		ps = append(ps, voterPorts{rp, ap})
		urls = append(urls, "http://localhost:"+ap)
	}
	voters := make([]*agentProc, 3)
	for i, p := range ps {
		name := fmt.Sprintf("vigil-voter-%d", i)
		voters[i] = &agentProc{api: urls[i], args: append([]string{"agent", "-roles=control", "-id=" + name,
			"-data-dir=" + filepath.Join(dir, name), "-log-level=warn",
			"-raft-addr=127.0.0.1:" + p.raft, "-raft-advertise=localhost:" + p.raft,
			"-api-addr=127.0.0.1:" + p.api, "-api-url=" + urls[i],
			"-bootstrap-id=vigil-voter-0", "-join=" + strings.Join(urls, ","),
			"-token-file=" + tokens, "-read-token-file=" + tokens, "-raft-secret-file=" + secret}, extra...)}
		var err error
		if voters[i].log, err = os.Create(filepath.Join(dir, name+".log")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(voters[i].stop)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, v := range voters {
				b, _ := os.ReadFile(v.log.Name())
				t.Logf("--- %s:\n%s", v.args[2], tail(b, 3000))
			}
		}
	})
	return voters, urls, ps
}

// voterPorts are a voter's raft and API ports.
type voterPorts struct{ raft, api string }
