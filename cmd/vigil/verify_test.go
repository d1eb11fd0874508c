package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/status/verify"
)

// TestAgentVerification: a node with every role and -verify-interval asks its own location
// (found in the gossip pool, at its gossip host on the given ports) and finds it answering as
// its verdicts say, on GET /v1/verification.
func TestAgentVerification(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api, dnsAddr, httpAddr := freePort(t), freePort(t), freePort(t)
	_, dnsPort, _ := net.SplitHostPort(dnsAddr)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	args := []string{"-roles", "control,checker,location", "-id", "solo", "-region", "us-east",
		"-data-dir", dir, "-raft-addr", freePort(t), "-api-addr", api, "-bootstrap", "-token-file", tokens,
		"-gossip-bind", freePort(t), "-insecure-gossip", "-dns", dnsAddr, "-http", httpAddr, "-log-level", "error",
		"-allow-loopback-probes", "-verify-interval", "200ms", "-verify-http-port", httpPort, "-verify-dns-port", dnsPort}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runAgent(ctx, args, &stdout, &stderr) }()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("agent exit %d: %s", code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop within 20s")
		}
	}()
	_, apiPort, _ := net.SplitHostPort(api)
	doc := `{"regions": ["us-east", "eu-west", "sa-east"],
		"checks": [{"id": "solo-api", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": ` + apiPort + `}}],
		"zones": [{"name": "solo.vigil.test",
		"record_sets": [{"name": "www", "type": "A", "policy": "multivalue", "records": [{"value": "192.0.2.7", "health_check": "solo-api"}, {"value": "192.0.2.8"}]}]}]}`
	waitUntil(t, 20*time.Second, "the voter to take the document", func() bool {
		code, _, err := request("PUT", "http://"+api+"/v1/document", doc)
		return err == nil && code == 200
	})
	var rep verify.Report
	waitUntil(t, 30*time.Second, "GET /v1/verification: solo agrees with its verdicts", func() bool {
		code, out, err := request("GET", "http://"+httpAddr+"/v1/verification", "")
		if err != nil || code != 200 || json.Unmarshal(out, &rep) != nil {
			return false
		}
		return len(rep.Locations) == 1 && rep.Locations[0].ID == "solo" && rep.Locations[0].Outcomes[verify.OutcomeAgree] >= 2
	})
	if rep.Disagreed != 0 || rep.Locations[0].Outcomes[verify.OutcomeNoAnswer] != 0 {
		t.Errorf("verification: %+v", rep)
	}
	var out, errOut bytes.Buffer
	if code := runStatus(t.Context(), []string{"--addr", httpAddr, "verification"}, &out, &errOut); code != 0 {
		t.Fatalf("vigil status verification: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "disagreed (0.00%)") || !regexp.MustCompile(`(?m)^solo +[1-9]\d* +0 +0 +0 +0 +agree +www\.solo\.vigil\.test A`).MatchString(out.String()) {
		t.Errorf("vigil status verification:\n%s", out.String())
	}
	t.Logf("vigil status verification:\n%s", out.String())
}

// TestPoolLocations: locations are reached at their gossip host; other roles and leaving
// members are left out.
func TestPoolLocations(t *testing.T) {
	got := poolLocations([]gossip.Member{
		{ID: "a", Roles: gossip.RoleLocation, Addr: "10.0.0.1:7946"},
		{ID: "b", Roles: gossip.RoleChecker, Addr: "10.0.0.2:7946"},
		{ID: "c", Roles: gossip.RoleLocation | gossip.RoleChecker, Addr: "[2001:db8::1]:7946"},
		{ID: "d", Roles: gossip.RoleLocation, Addr: "10.0.0.4:7946", Leaving: true},
	}, "7701", "53")
	want := []verify.Location{{ID: "a", Status: "http://10.0.0.1:7701", DNS: "10.0.0.1:53"}, {ID: "c", Status: "http://[2001:db8::1]:7701", DNS: "[2001:db8::1]:53"}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Status != want[i].Status || got[i].DNS != want[i].DNS {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
