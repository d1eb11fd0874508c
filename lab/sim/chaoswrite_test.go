package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
)

// startVoter starts one raft voter with its BoltDB log and its API on loopback, applies the
// demo document, and returns the API's URL; wrap, when set, wraps the API's handler.
func startVoter(t *testing.T, wrap func(*control.Server, http.Handler) http.Handler) string {
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
	node, err := control.NewServer(control.ServerConfig{
		ID: "solo", DataDir: filepath.Join(t.TempDir(), "data"), RaftAddr: fmt.Sprintf("127.0.0.1:%d", raftPort), APIURL: url, RaftSecret: []byte("sim-test-raft-secret-00000000000"),
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
	body, err := os.ReadFile("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(client.Config{Voters: []string{url}, Token: nodesToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutDocument(t.Context(), body, client.ContentJSON); err != nil {
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
	api := startVoter(t, func(n *control.Server, h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, victim) && lied.CompareAndSwap(false, true) {
				_ = json.NewEncoder(rw).Encode(state.WriteResult{Index: n.State().Index})
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

// TestWriterCountsOnlyAcknowledgements: a write answered with an error, whether or not the
// voter applied it, or answered without an index, is failed (its outcome unknown), never
// acknowledged; and a read whose answer does not say it is linearizable checks nothing.
func TestWriterCountsOnlyAcknowledgements(t *testing.T) {
	api := startVoter(t, func(n *control.Server, h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut {
				h.ServeHTTP(rw, r)
				return
			}
			switch {
			case strings.HasSuffix(r.URL.Path, "/record_sets/chaos-3/TXT"): // not applied
				rw.WriteHeader(http.StatusServiceUnavailable)
				_, _ = rw.Write([]byte(`{"error": "planted: no leader"}`))
			case strings.HasSuffix(r.URL.Path, "/record_sets/chaos-4/TXT"): // no index
				_, _ = rw.Write([]byte(`{"index": 0}`))
			case strings.HasSuffix(r.URL.Path, "/record_sets/chaos-5/TXT"): // applied, answer lost
				h.ServeHTTP(httptest.NewRecorder(), r)
				rw.WriteHeader(http.StatusGatewayTimeout)
			default:
				h.ServeHTTP(rw, r)
			}
		})
	})
	w := runWriter(t, api, 10*writeInterval)
	s := w.Verify(t.Context(), 10*time.Second)
	t.Logf("%+v", s)
	if s.Failed != 3 || s.Acknowledged != s.Attempted-3 || !s.OK() || s.Checked != s.Acknowledged {
		t.Fatalf("%+v: want chaos-3, -4 and -5 failed, every other write acknowledged and checked", s)
	}

	// A voter that serves every read as a plain one, whatever the request asks.
	plain := startVoter(t, func(n *control.Server, h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				r.URL.RawQuery = ""
			}
			h.ServeHTTP(rw, r)
		})
	})
	w = runWriter(t, plain, 5*writeInterval)
	s = w.Verify(t.Context(), time.Second)
	if s.OK() || s.Checked != 0 || !strings.Contains(s.ReadBack, "not linearizable") {
		t.Fatalf("%+v: want no write checked by reads that are not linearizable", s)
	}
}
