package main

import (
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
)

// TestTSIGCommands: with a real voter that holds a DNSSEC secret, `vigil tsig put` stores a
// key from a file of its secret alone or of a key line, `list` shows names, algorithms and
// "(set)", never the secret, `delete` removes a key; a weak algorithm, a short secret, a key
// line of another name and a missing -secret-file are refused before any request.
func TestTSIGCommands(t *testing.T) {
	dir := t.TempDir()
	url, _ := sealedVoter(t, dir)
	vigil := func(args ...string) (int, string, string) { return runCLI(t, args...) }
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := base64.StdEncoding.EncodeToString([]byte("cmd tsig test secret 0123456789"))
	alone := file("alone", "# made for the test\n"+secret+"\n")
	line := file("line", "hmac-sha512:b-xfr.:"+secret+"\n")

	for _, bad := range [][]string{
		{"tsig", "put", "a-xfr.", "-secret-file", alone, "-algorithm", "hmac-sha1"},
		{"tsig", "put", "a-xfr.", "-secret-file", file("short", base64.StdEncoding.EncodeToString([]byte("short"))+"\n")},
		{"tsig", "put", "a-xfr.", "-secret-file", line},
		{"tsig", "put", "a-xfr."},
	} {
		if code, out, errOut := vigil(append(bad, "-server", url)...); code != 2 || strings.Contains(out+errOut, secret) {
			t.Errorf("%v: exit %d, %s %s; want 2 and no secret", bad, code, out, errOut)
		}
	}
	if code, out, errOut := vigil("tsig", "put", "a-xfr.", "-secret-file", alone, "-server", url); code != 0 || !strings.Contains(out, "a-xfr. (hmac-sha256) stored sealed") {
		t.Fatalf("put from the secret alone: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := vigil("tsig", "put", "B-XFR", "-secret-file", line, "-server", url); code != 0 || !strings.Contains(out, "b-xfr. (hmac-sha512)") {
		t.Fatalf("put from a key line: %d %s %s", code, out, errOut)
	}
	code, out, errOut := vigil("tsig", "list", "-server", url)
	if code != 0 || out != "a-xfr. hmac-sha256 secret (set)\nb-xfr. hmac-sha512 secret (set)\n" {
		t.Fatalf("list: %d %q %s", code, out, errOut)
	}
	if code, out, errOut := vigil("tsig", "delete", "a-xfr", "-server", url); code != 0 || !strings.Contains(out, "a-xfr. deleted") {
		t.Fatalf("delete: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := vigil("tsig", "delete", "a-xfr", "-server", url); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("delete again: %d %s", code, errOut)
	}
	if _, out, _ := vigil("tsig", "list", "-server", url); out != "b-xfr. hmac-sha512 secret (set)\n" {
		t.Errorf("list after the delete: %q", out)
	}
}

// sealedVoter starts one voter that holds a DNSSEC secret (so it can seal zone and TSIG keys),
// waits until it leads, serves its API with agentToken as the write token and sets VIGIL_TOKEN;
// it returns the API's URL and the voter.
func sealedVoter(t *testing.T, dir string) (string, *control.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	node, err := control.NewServer(control.ServerConfig{
		ID: "solo", DataDir: filepath.Join(dir, "data"), RaftAddr: freePort(t), APIURL: url, RaftSecret: []byte("cmd-test-raft-secret-00000000000"),
		Timing:       control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond},
		DNSSECSecret: []byte("cmd-test-dnssec-secret-000000000"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	if err := node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !node.IsLeader(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the voter did not become the leader within 10s")
		}
	}
	api, err := control.NewAPI(control.APIConfig{Node: node, WriteTokens: []string{agentToken}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("VIGIL_TOKEN", agentToken)
	return url, node
}
