package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
)

// TestOverrideAuditToken: `vigil token create` makes a scoped token whose file line a voter
// takes; with it, `vigil override set` drains a record and forces a check of its zone and
// prefix, is refused outside them, `list` shows the overrides with their author, `clear`
// removes one by its target, and `vigil audit` lists every accepted write with the token's
// name.
func TestOverrideAuditToken(t *testing.T) {
	run1 := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := run1("token", "create", "-name", "web-team", "-scope", "write:check=web-,zone=demo.vigil.test.")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 {
		t.Fatalf("token create: %d %q %q", code, out, errOut)
	}
	secret, line := strings.TrimSpace(lines[1]), strings.TrimSpace(lines[3])
	if !strings.HasPrefix(line, "web-team write:check=web-,zone=demo.vigil.test. sha256:") {
		t.Fatalf("token line %q", line)
	}
	// A zone scope is a domain name, canonicalised; anything else is refused at once.
	if code, out, _ := run1("token", "create", "-name", "shop", "-scope", "write:zone=Shop"); code != 0 || !strings.Contains(out, "shop write:zone=shop. sha256:") {
		t.Fatalf("token create zone=Shop: %d %q", code, out)
	}
	for _, bad := range []string{"write:zone=shop-*", "write:zone=a..b", "write:zone=.", "write:zone=shop/x"} {
		if code, _, errOut := run1("token", "create", "-name", "bad", "-scope", bad); code != 2 || !strings.Contains(errOut, "is not a domain name") {
			t.Errorf("token create -scope %s: %d %q, want refused as not a domain name", bad, code, errOut)
		}
	}
	_, named, err := splitTokens([]string{agentToken, line})
	if err != nil || len(named) != 1 || named[0].Name != "web-team" {
		t.Fatalf("the token line does not read back: %v %+v", err, named)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	node, err := control.NewServer(control.ServerConfig{ID: "solo", DataDir: filepath.Join(t.TempDir(), "data"), RaftAddr: freePort(t), APIURL: url, RaftSecret: []byte("cmd-test-raft-secret-00000000000"),
		Timing: control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if err := node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	api, err := control.NewAPI(control.APIConfig{Node: node, WriteTokens: []string{agentToken}, Tokens: named})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	for deadline := time.Now().Add(5 * time.Second); !node.IsLeader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
	}
	t.Setenv("VIGIL_TOKEN", agentToken)
	if code, out, errOut := run1("apply", "-f", "../../examples/demo.yaml", "-server", url); code != 0 {
		t.Fatalf("apply: %q %q", out, errOut)
	}
	t.Setenv("VIGIL_TOKEN", secret)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"override", "set", "-server", url, "-drain", "demo.vigil.test/www/A/192.0.2.1", "-reason", "host swap", "-for", "30m"}, 0, "set until"},
		{[]string{"override", "set", "-server", url, "-check", "web-eu-west", "-state", "unhealthy", "-reason", "deploy", "-for", "1h"}, 0, "set until"},
		{[]string{"override", "set", "-server", url, "-check", "api-1", "-reason", "x"}, 1, "HTTP 403"},
		{[]string{"override", "list", "-server", url}, 0, "web-team"},
		{[]string{"override", "clear", "-server", url, "-check", "web-eu-west"}, 0, "cleared"},
		{[]string{"audit", "-server", url}, 0, "web-team       -    clear_override  DELETE /v1/overrides/"},
		{[]string{"audit", "-verify", "-server", url}, 0, "OK: 4 entries (4 chained, 0 from before the chain), 3 links checked"},
		{[]string{"audit", "-refusals", "-server", url}, 0, "403   web-team"},
	} {
		code, out, errOut := run1(tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.out) {
			t.Errorf("vigil %s: %d\n%s%s\nwant %d and %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.out)
		}
		t.Logf("vigil %s:\n%s%s", strings.Join(tc.args, " "), out, errOut)
	}
	// A log with an entry taken out, as a tampered voter would answer, does not verify.
	tampered := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequest(http.MethodGet, url+r.URL.RequestURI(), nil)
		req.Header.Set("Authorization", r.Header.Get("Authorization"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var body map[string]json.RawMessage
		var view state.AuditView
		if json.NewDecoder(resp.Body).Decode(&body) != nil || json.Unmarshal(body["data"], &view) != nil || len(view.Entries) < 3 {
			http.Error(w, "bad answer", http.StatusBadGateway)
			return
		}
		view.Entries = append(view.Entries[:1], view.Entries[2:]...)
		view.Retained--
		body["data"], _ = json.Marshal(view)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	defer tampered.Close()
	t.Setenv("VIGIL_TOKEN", agentToken)
	if code, out, errOut := run1("audit", "-verify", "-server", tampered.URL); code != 1 || !strings.Contains(out, "FAILED: 1 entries are missing from the chain") {
		t.Errorf("vigil audit -verify of a log with an entry removed: %d\n%s%s", code, out, errOut)
	} else {
		t.Logf("vigil audit -verify of a log with an entry removed: %d\n%s%s", code, out, errOut)
	}
	if ovs := node.State().Overrides(); len(ovs) != 1 || ovs[0].Kind != state.OverrideDrain || ovs[0].Author != "web-team" {
		t.Fatalf("overrides: %+v", ovs)
	}
}
