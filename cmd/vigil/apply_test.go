package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
)

// TestApply: `vigil apply -f` puts a document in place through a real voter, and a rejected
// document lists every problem and changes nothing.
func TestApply(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	node, err := control.NewServer(control.ServerConfig{
		ID: "solo", DataDir: filepath.Join(dir, "data"), RaftAddr: freePort(t), APIURL: url, RaftSecret: []byte("cmd-test-raft-secret-00000000000"),
		Timing: control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if err := node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	api, err := control.NewAPI(control.APIConfig{Node: node, WriteTokens: []string{agentToken}, OpenReads: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !node.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}

	apply := func(file string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"apply", "-f", file, "-server", url}, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	t.Setenv("VIGIL_TOKEN", agentToken)
	code, out, errOut := apply("../../examples/demo.yaml")
	if code != 0 || !strings.Contains(out, "applied at index") {
		t.Fatalf("apply demo: %d %q %q", code, out, errOut)
	}
	applied := node.State().Index
	if len(node.State().Document().Checks) == 0 {
		t.Fatal("the demo's checks are not in the state")
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("regions: [a]\ncheks: []\nzonez: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = apply(bad)
	if code != 1 || !strings.Contains(errOut, "cheks: unknown field") || !strings.Contains(errOut, "zonez: unknown field") {
		t.Fatalf("apply bad: %d %q", code, errOut)
	}
	t.Setenv("VIGIL_TOKEN", "wrong")
	code, _, errOut = apply("../../examples/demo.yaml")
	if code != 1 || !strings.Contains(errOut, "401") {
		t.Fatalf("apply with a wrong token: %d %q", code, errOut)
	}
	if node.State().Index != applied {
		t.Fatalf("a rejected apply moved the index from %d to %d", applied, node.State().Index)
	}
}

// vigil apply asks again until a voter answers, within its -timeout; past it, it says why
// once, naming each voter once.
func TestApplyWaitsForVoter(t *testing.T) {
	addr := freePort(t)
	done := make(chan [3]string, 1)
	start := time.Now()
	go func() {
		var out, errOut bytes.Buffer
		code := run(t.Context(), []string{"apply", "-f", "../../examples/demo.yaml", "-server", "http://" + addr, "-timeout", "20s"}, &out, &errOut)
		done <- [3]string{strconv.Itoa(code), out.String(), errOut.String()}
	}()
	time.Sleep(time.Second)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"index": 7}`)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	select {
	case res := <-done:
		if res[0] != "0" || !strings.Contains(res[1], "applied at index 7") {
			t.Errorf("apply: exit %s, stdout %q, stderr %q", res[0], res[1], res[2])
		}
		if took := time.Since(start); took < time.Second {
			t.Errorf("apply finished after %v, before the voter listened", took)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("apply did not finish within 15s of the voter listening")
	}

	var out, errOut bytes.Buffer
	start = time.Now()
	code := run(t.Context(), []string{"apply", "-f", "../../examples/demo.yaml", "-server", "http://" + freePort(t), "-timeout", "1s"}, &out, &errOut)
	first, fix, _ := strings.Cut(errOut.String(), "\n")
	if code != 1 || !strings.Contains(first, "within 1s") || !strings.Contains(first, "connection refused") ||
		strings.Count(first, "http://") != 1 || !strings.Contains(fix, "set -server or VIGIL_SERVER") {
		t.Errorf("apply with no voter: exit %d, stderr %q", code, errOut.String())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("apply with -timeout 1s took %v", took)
	}
}
