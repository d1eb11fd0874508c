package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
)

const (
	writeToken = "client-test-write-token"
	readToken  = "client-test-read-token"
)

// testDoc is a valid document: three regions, two checks, one zone.
const testDoc = `
regions: [us-east, eu-west, sa-east]
checks:
  - id: web-1
    protocol: http
    target: {host: 127.0.0.1, port: 8081}
  - id: web-2
    protocol: tcp
    target: {host: 127.0.0.1, port: 8082}
zones:
  - name: example.test.
    record_sets:
      - name: www
        type: A
        policy: failover
        records:
          - {value: 192.0.2.1, health_check: web-1, role: primary}
          - {value: 192.0.2.2, health_check: web-2, role: secondary}
`

// startVoter starts a real voter (raft on TCP, its log in BoltDB) with its API on a real HTTP
// server, and returns the API's base URL once it leads. Reads need a token.
func startVoter(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := raftLn.Addr().String()
	raftLn.Close()
	base := "http://" + ln.Addr().String()
	node, err := control.NewServer(control.ServerConfig{
		ID: "solo", DataDir: filepath.Join(t.TempDir(), "data"), LogStore: control.LogStoreBolt,
		RaftAddr: raftAddr, APIURL: base, RaftSecret: []byte("client-test-raft-secret-00000000"), ApplyTimeout: 5 * time.Second,
		Timing: control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	if err := node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	api, err := control.NewAPI(control.APIConfig{Node: node, WriteTokens: []string{writeToken}, ReadTokens: []string{readToken}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !node.IsLeader() || !node.Ready() || node.State().Voters["solo"] != base {
		if time.Now().After(deadline) {
			t.Fatal("the voter did not lead within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return base
}

func newClient(t *testing.T, token string, voters ...string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Voters: voters, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apiError returns err as an *Error with the status code want, or fails.
func apiError(t *testing.T, what string, err error, want int) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v, want an *Error", what, err)
	}
	if e.StatusCode != want || e.Message == "" {
		t.Fatalf("%s: HTTP %d %q, want %d with a message", what, e.StatusCode, e.Message, want)
	}
	return e
}

// TestClient: every kind of operation the call sites make, against a real voter, and the
// errors of the API's answers: auth failure, validation error, not found.
func TestClient(t *testing.T) {
	base := startVoter(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := newClient(t, writeToken, base)

	t.Run("success", func(t *testing.T) {
		res, err := c.PutDocument(ctx, []byte(testDoc), client.ContentYAML)
		if err != nil || res.Index == 0 {
			t.Fatalf("PutDocument: %+v %v", res, err)
		}
		checks, err := c.Checks(ctx)
		if err != nil || len(checks) != 2 {
			t.Fatalf("Checks: %d %v", len(checks), err)
		}
		// A partial check: the voter fills in the defaults of the fields not sent.
		if _, err := c.PutCheck(ctx, "api-1", map[string]any{"id": "api-1", "protocol": "tcp",
			"target": map[string]any{"host": "127.0.0.1", "port": 9000}}); err != nil {
			t.Fatalf("PutCheck: %v", err)
		}
		ch, err := c.Check(ctx, "api-1")
		if err != nil || ch.Target.Port != 9000 || ch.Interval == 0 {
			t.Fatalf("Check after PutCheck: %+v %v", ch, err)
		}
		rs := &config.RecordSet{Name: "api", Type: "A", Policy: "multivalue", Records: []config.Record{{Value: "192.0.2.9", HealthCheck: "api-1"}}}
		if _, err := c.PutRecordSet(ctx, "example.test.", rs); err != nil {
			t.Fatalf("PutRecordSet: %v", err)
		}
		sets, meta, err := c.Consistent().RecordSets(ctx, "example.test.")
		if err != nil || len(sets) != 2 || !meta.Consistent || meta.Index < res.Index {
			t.Fatalf("consistent RecordSets: %+v %+v %v", sets, meta, err)
		}
		if _, meta, err := c.RecordSets(ctx, "example.test."); err != nil || meta.Consistent {
			t.Fatalf("RecordSets: %+v %v, want a read that is not linearizable", meta, err)
		}
		if got, err := c.RecordSet(ctx, "example.test.", "api", "A"); err != nil || len(got.Records) != 1 {
			t.Fatalf("RecordSet: %+v %v", got, err)
		}
		if _, err := c.SetOverride(ctx, state.OverrideRequest{Kind: "unhealthy", Check: "web-1", Reason: "test", For: "1h"}); err != nil {
			t.Fatalf("SetOverride: %v", err)
		}
		ovs, err := c.Overrides(ctx)
		if err != nil || len(ovs) != 1 || !ovs[0].Active {
			t.Fatalf("Overrides: %+v %v", ovs, err)
		}
		if _, err := c.ClearOverride(ctx, ovs[0].ID); err != nil {
			t.Fatalf("ClearOverride: %v", err)
		}
		audit, err := c.Audit(ctx, 10, 0)
		if err != nil || len(audit.Entries) == 0 || audit.Entries[len(audit.Entries)-1].Op != "clear_override" {
			t.Fatalf("Audit: %+v %v", audit, err)
		}
		if v, err := c.DNSSEC(ctx, "example.test."); err != nil || v.Enabled || v.Zone != "example.test." {
			t.Fatalf("DNSSEC of an unsigned zone: %+v %v", v, err)
		}
		if cl, err := c.Cluster(ctx); err != nil || cl.Leader != "solo" || cl.APIs["solo"] != base {
			t.Fatalf("Cluster: %+v %v", cl, err)
		}
		if _, err := c.DeleteRecordSet(ctx, "example.test.", "api", "A"); err != nil {
			t.Fatalf("DeleteRecordSet: %v", err)
		}
		if _, err := c.DeleteCheck(ctx, "api-1"); err != nil {
			t.Fatalf("DeleteCheck: %v", err)
		}
		s, meta, err := c.State(ctx)
		if err != nil || meta.Index == 0 || meta.Stale || len(s.Document().Checks) != 2 {
			t.Fatalf("State: %+v %v", meta, err)
		}
	})

	t.Run("auth failure", func(t *testing.T) {
		_, err := newClient(t, "wrong", base).PutDocument(ctx, []byte(testDoc), client.ContentYAML)
		apiError(t, "PutDocument with a wrong token", err, http.StatusUnauthorized)
		_, err = newClient(t, "", base).Checks(ctx)
		apiError(t, "Checks with no token", err, http.StatusUnauthorized)
		_, err = newClient(t, readToken, base).DeleteCheck(ctx, "web-1")
		apiError(t, "DeleteCheck with a read token", err, http.StatusUnauthorized)
		if client.Unavailable(err) || errors.Is(err, client.ErrNotFound) {
			t.Errorf("a refusal counts as unavailable or not found: %v", err)
		}
	})

	t.Run("validation error", func(t *testing.T) {
		before, _, err := c.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.PutDocument(ctx, []byte("regions: [a]\ncheks: []\nzonez: []\n"), client.ContentYAML)
		e := apiError(t, "PutDocument of an invalid document", err, http.StatusBadRequest)
		var paths []string
		for _, p := range e.Problems {
			paths = append(paths, p.Path)
		}
		if got := strings.Join(paths, ","); !strings.Contains(got, "cheks") || !strings.Contains(got, "zonez") {
			t.Errorf("problems %v: want cheks and zonez", e.Problems)
		}
		if !strings.Contains(err.Error(), "cheks") || !strings.Contains(err.Error(), "HTTP 400") {
			t.Errorf("Error() = %q: want the status and the problems", err)
		}
		// A check whose failover record names a check that does not exist: the resulting
		// configuration is invalid.
		_, err = c.DeleteCheck(ctx, "web-1")
		apiError(t, "DeleteCheck of a check a record uses", err, http.StatusUnprocessableEntity)
		after, _, err := c.State(ctx)
		if err != nil || after.Index != before.Index {
			t.Errorf("rejected writes moved the index from %d to %d (%v)", before.Index, after.Index, err)
		}
	})

	t.Run("not found", func(t *testing.T) {
		_, err := c.Check(ctx, "no-such-check")
		apiError(t, "Check of a missing check", err, http.StatusNotFound)
		if !errors.Is(err, client.ErrNotFound) {
			t.Errorf("errors.Is(%v, ErrNotFound) = false", err)
		}
		_, _, err = c.RecordSets(ctx, "no-such-zone.test.")
		if !errors.Is(err, client.ErrNotFound) {
			t.Errorf("RecordSets of a missing zone: %v, want ErrNotFound", err)
		}
		_, err = c.DeleteRecordSet(ctx, "example.test.", "nothing", "A")
		if !errors.Is(err, client.ErrNotFound) {
			t.Errorf("DeleteRecordSet of a missing set: %v, want ErrNotFound", err)
		}
	})
}

// A call moves on to the next voter when one does not answer or answers 503, and stops at
// the first real answer, an error or not.
func TestFailover(t *testing.T) {
	base := startVoter(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // refuses connections
	var asked atomic.Int32
	noLeader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error": "control: no leader"}`))
	}))
	defer noLeader.Close()

	c := newClient(t, writeToken, closed.URL, noLeader.URL+"/", " ", base)
	if _, err := c.PutDocument(ctx, []byte(testDoc), client.ContentYAML); err != nil {
		t.Fatalf("PutDocument past a closed port and a voter with no leader: %v", err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the voter with no leader was asked %d times, want 1", n)
	}

	// A 404 of the first voter is the answer: the next one is not asked.
	asked.Store(0)
	c = newClient(t, writeToken, base, noLeader.URL)
	if _, err := c.Check(ctx, "nope"); !errors.Is(err, client.ErrNotFound) || asked.Load() != 0 {
		t.Errorf("Check: %v, the next voter asked %d times; want ErrNotFound and 0", err, asked.Load())
	}

	// No voter can answer: the last one's error, unavailable.
	c = newClient(t, writeToken, closed.URL, noLeader.URL)
	_, err := c.Checks(ctx)
	e := apiError(t, "Checks of no usable voter", err, http.StatusServiceUnavailable)
	if !client.Unavailable(err) || e.Message != "control: no leader" || !strings.HasPrefix(e.URL, noLeader.URL) {
		t.Errorf("Checks: %+v, unavailable %v", e, client.Unavailable(err))
	}
	_, err = newClient(t, writeToken, closed.URL).Checks(ctx)
	if !client.Unavailable(err) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Checks of a closed port: %v, want unavailable and connection refused", err)
	}
}

// An answer larger than MaxAnswer is an error, not a truncated read; a redirect is not
// followed.
func TestBounds(t *testing.T) {
	base := startVoter(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := newClient(t, writeToken, base)
	if _, err := c.PutDocument(ctx, []byte(testDoc), client.ContentYAML); err != nil {
		t.Fatal(err)
	}
	small, err := client.New(client.Config{Voters: []string{base}, Token: writeToken, MaxAnswer: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Document(ctx); err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
		t.Errorf("Document with MaxAnswer 1000: %v", err)
	}
	if _, err := small.Check(ctx, "web-1"); err != nil {
		t.Errorf("Check with MaxAnswer 1000: %v", err)
	}

	moved := httptest.NewServer(http.RedirectHandler(base+"/v1/checks/web-1", http.StatusMovedPermanently))
	defer moved.Close()
	_, err = newClient(t, writeToken, moved.URL).DeleteCheck(ctx, "web-2")
	apiError(t, "DeleteCheck answered by a redirect", err, http.StatusMovedPermanently)

	for _, bad := range [][]string{nil, {" "}, {"127.0.0.1:7100"}, {"ftp://x"}} {
		if _, err := client.New(client.Config{Voters: bad}); err == nil {
			t.Errorf("New with voters %q: no error", bad)
		}
	}
}
