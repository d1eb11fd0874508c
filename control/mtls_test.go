package control

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// testPKI writes a CA and a certificate for each NAME=role into a temporary directory.
func testPKI(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	var reqs []tlsconf.Request
	for _, n := range names {
		name, role, _ := strings.Cut(n, "=")
		reqs = append(reqs, tlsconf.Request{Name: name, Roles: []string{role}, Hosts: []string{"127.0.0.1"}})
	}
	if _, err := tlsconf.Init(dir, reqs, tlsconf.InitOptions{Now: time.Now(), CAValid: time.Hour, CertValid: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func testStore(t *testing.T, dir, name string) *tlsconf.Store {
	t.Helper()
	s, err := tlsconf.Load(tlsconf.Files{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem"), CA: filepath.Join(dir, "ca.pem")}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// certClient is an HTTP client presenting name's certificate and trusting the CA of dir.
func certClient(t *testing.T, dir, name string) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: testStore(t, dir, name).ClientConfig(tlsconf.Peer{})}}
}

// TestMutualTLSCluster: three voters replicate over raft on mutual TLS; their APIs take a
// client certificate instead of a token: an operator's writes through a follower (forwarded
// with the follower's voter certificate), a checker's only reads, and nothing at all without
// a certificate or token.
func TestMutualTLSCluster(t *testing.T) {
	dir := testPKI(t, "v0=control", "v1=control", "v2=control", "op=operator", "checker=checker")
	var nodes []*Server
	var urls []string
	for i := range 3 {
		name := []string{"v0", "v1", "v2"}[i]
		st := testStore(t, dir, name)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "https://" + ln.Addr().String()
		n, err := NewServer(ServerConfig{ID: name, DataDir: filepath.Join(t.TempDir(), "d"), RaftAddr: "127.0.0.1:0",
			RaftTLS: st, APIURL: url, Timing: testTiming, Allocators: newSeqAllocator, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		api, err := NewAPI(APIConfig{Node: n, WriteTokens: []string{testToken}, ClientCerts: st.PeerRoles,
			LeaderWait: time.Second, Client: &http.Client{Transport: &http.Transport{TLSClientConfig: st.ClientConfig(tlsconf.Peer{})}}})
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: api, TLSConfig: st.ServerConfig(tlsconf.Peer{Optional: true}), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.ServeTLS(ln, "", "") }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			_ = n.Close()
		})
		nodes, urls = append(nodes, n), append(urls, url)
	}
	if err := nodes[0].Bootstrap(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "v0 leads", nodes[0].IsLeader)
	for i := 1; i < 3; i++ {
		if _, err := nodes[0].AddVoter(state.Voter{ID: nodes[i].ID(), API: urls[i]}, nodes[i].RaftAddr()); err != nil {
			t.Fatalf("add %s over TLS: %v", nodes[i].ID(), err)
		}
	}
	waitFor(t, 10*time.Second, "v0 records its API URL", func() bool { return nodes[0].State().Voters["v0"] == urls[0] })

	op, checker := certClient(t, dir, "op"), certClient(t, dir, "checker")
	if code, out := doWith(t, op, "PUT", urls[2]+"/v1/document", "", "application/yaml", testDoc); code != http.StatusOK {
		t.Fatalf("operator's write through a follower: %d %s", code, out)
	}
	for _, n := range nodes {
		waitFor(t, 10*time.Second, n.ID()+" applies the write", func() bool { return n.State().NumChecks() == 2 })
	}
	if code, out := doWith(t, checker, "PUT", urls[1]+"/v1/checks/web-9", "", "application/json", checkJSON("web-9", 8089)); code != http.StatusUnauthorized {
		t.Errorf("checker's write: %d %s, want 401", code, out)
	}
	if code, out := doWith(t, checker, "GET", urls[1]+"/v1/checks/web-1", "", "", ""); code != http.StatusOK {
		t.Errorf("checker's read: %d %s", code, out)
	}
	anon := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the anonymous client
	if code, _ := doWith(t, anon, "GET", urls[1]+"/v1/checks/web-1", "", "", ""); code != http.StatusUnauthorized {
		t.Errorf("a read without certificate or token: %d, want 401", code)
	}
	if code, out := doWith(t, anon, "PUT", urls[1]+"/v1/checks/web-9", testToken, "application/json", checkJSON("web-9", 8089)); code != http.StatusOK {
		t.Errorf("a token still writes without a certificate: %d %s", code, out)
	}
}
