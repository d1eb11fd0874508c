package externaldns

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/client"
)

const testToken = "externaldns-test-token"

// scopedToken may write the zone ext.example.test. and the checks the provider names
// (edns-...), nothing else: the scope the provider is documented to run with. The zone is
// written whole, with its final dot, so that the scope means the same whether zone scopes
// compare text prefixes or whole labels.
const (
	scopedToken = "externaldns-scoped-token"
	scopedScope = "write:zone=ext.example.test.,check=edns-"
)

// testDoc has the zone the provider manages, in three regions, and a zone whose name
// servers are an NS record set at its apex.
const testDoc = `regions: [us-east, eu-west, sa-east]
zones:
  - name: ext.example.test
    name_servers: [ns1.example.net.]
  - name: apex.example.test
    record_sets:
      - {name: "@", type: NS, records: [{value: ns1.example.net.}, {value: ns2.example.net.}]}
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
	scope, err := control.ParseScope(scopedScope)
	if err != nil {
		t.Fatal(err)
	}
	api, err := control.NewAPI(control.APIConfig{Node: v.node, WriteTokens: []string{testToken},
		Tokens: []control.Token{{Name: "externaldns", Scope: scope, Hash: control.HashToken(scopedToken)}}})
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

// startProvider serves a provider of ext.example.test writing to v with the zone-scoped
// token.
func startProvider(t *testing.T, v *vigil) *httptest.Server {
	t.Helper()
	srv, _ := startProviderWith(t, v, Config{})
	return srv
}

// startProviderWith serves a provider writing to v as cfg says beside that (of
// ext.example.test unless cfg names zones, with the zone-scoped token unless cfg names one),
// and returns the registry of its metrics.
func startProviderWith(t *testing.T, v *vigil, cfg Config) (*httptest.Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Voters, cfg.Registerer = []string{v.url}, reg
	if len(cfg.Zones) == 0 {
		cfg.Zones = []string{"ext.example.test"}
	}
	if cfg.Token == "" {
		cfg.Token = scopedToken
	}
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, reg
}
