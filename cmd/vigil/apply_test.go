package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
	node, err := control.NewNode(control.NodeConfig{
		ID: "solo", DataDir: filepath.Join(dir, "data"), RaftAddr: freePort(t), APIURL: url,
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
