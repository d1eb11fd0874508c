package externaldns

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/client"
)

const testToken = "externaldns-test-token"

// testDoc has the zone the provider manages, in three regions.
const testDoc = `regions: [us-east, eu-west, sa-east]
zones:
  - name: ext.example.test
    name_servers: [ns1.example.net.]
`

// vigil is a real control voter with its API, holding testDoc.
type vigil struct {
	url  string
	node *control.Server
}

func startVigil(t *testing.T) *vigil {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raft, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := raft.Addr().String()
	raft.Close()
	v := &vigil{url: "http://" + ln.Addr().String()}
	v.node, err = control.NewServer(control.ServerConfig{
		ID: "solo", DataDir: filepath.Join(t.TempDir(), "data"), RaftAddr: raftAddr, APIURL: v.url, RaftSecret: []byte("externaldns-test-raft-secret-000"),
		Timing: control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.node.Close() })
	if err := v.node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	api, err := control.NewAPI(control.APIConfig{Node: v.node, WriteTokens: []string{testToken}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for !v.node.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctl, err := client.New(client.Config{Voters: []string{v.url}, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.PutDocument(t.Context(), []byte(testDoc), client.ContentYAML); err != nil {
		t.Fatalf("put document: %v", err)
	}
	return v
}

// startProvider serves a provider of ext.example.test writing to v.
func startProvider(t *testing.T, v *vigil) *httptest.Server {
	t.Helper()
	p, err := New(Config{Voters: []string{v.url}, Token: testToken, Zones: []string{"ext.example.test"},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}
