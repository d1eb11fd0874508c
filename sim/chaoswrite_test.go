package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
)

// startVoter starts one raft voter with its BoltDB log and its API on loopback, applies the
// demo document, and returns the API's URL; wrap, when set, wraps the API's handler.
func startVoter(t *testing.T, wrap func(*control.Node, http.Handler) http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	node, err := control.NewNode(control.NodeConfig{
		ID: "solo", DataDir: filepath.Join(t.TempDir(), "data"), RaftAddr: fmt.Sprintf("127.0.0.1:%d", raftPort), APIURL: url,
		Timing: control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close() })
	if err := node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	api, err := control.NewAPI(control.APIConfig{Node: node, WriteTokens: []string{nodesToken}})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = api
	if wrap != nil {
		h = wrap(node, api)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for !node.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	body, err := os.ReadFile("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := putDocument(t.Context(), url, body); err != nil {
		t.Fatal(err)
	}
	return url
}

// runWriter runs a writer of the demo zone through api for d and verifies its writes.
func runWriter(t *testing.T, api string, d time.Duration) *Writer {
	t.Helper()
	w, err := NewWriter([]string{api}, "demo.vigil.test.", nodesToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	w.Run(ctx)
	return w
}

// TestWriterChecksEveryWrite: against a real voter, every acknowledged write is checked by a
// linearizable read with its own value, keys being reused only once checked; none is lost.
func TestWriterChecksEveryWrite(t *testing.T) {
	api := startVoter(t, nil)
	w := runWriter(t, api, (writeKeys+10)*writeInterval)
	if w.ledger.Unchecked() == 0 {
		t.Error("no write waited for the final read")
	}
	s := w.Verify(t.Context(), 10*time.Second)
	t.Logf("%+v", s)
	if !s.OK() || s.Checked != s.Acknowledged || s.Acknowledged <= writeKeys || s.Failed != 0 {
		t.Fatalf("%d acknowledged (want more than the %d keys, so that keys were reused), %d checked, %d lost, %d failed: %v",
			s.Acknowledged, writeKeys, s.Checked, s.Lost, s.Failed, s.Problems)
	}
}

// TestWriterCatchesALostWrite: a control API that acknowledges one write without applying it
// (a planted bug) is caught: that write is lost, the others are checked.
func TestWriterCatchesALostWrite(t *testing.T) {
	const victim = "/record_sets/chaos-3/TXT"
	var lied atomic.Bool
	api := startVoter(t, func(n *control.Node, h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, victim) && lied.CompareAndSwap(false, true) {
				_ = json.NewEncoder(rw).Encode(control.WriteResult{Index: n.State().Index})
				return
			}
			h.ServeHTTP(rw, r)
		})
	})
	w := runWriter(t, api, 10*writeInterval)
	s := w.Verify(t.Context(), 10*time.Second)
	if !lied.Load() || s.OK() || s.Lost != 1 || s.Checked != s.Acknowledged-1 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "chaos-3=3") {
		t.Fatalf("lied %v: %+v; want chaos-3=3 lost and every other write checked", lied.Load(), s)
	}
}
