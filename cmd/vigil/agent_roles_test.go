package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/location"
)

// The flags map onto the node's configuration: -join splits into gossip peers and voters'
// URLs, -ns into virtual name servers, and the data plane reads with the first read token.
func TestAgentConfigFromFlags(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	reads := filepath.Join(dir, "reads")
	if err := os.WriteFile(tokens, []byte("w1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reads, []byte("# readers\nr1\nr2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := agentFlags{roles: "control,checker,location", id: "n1", region: "us-east", dataDir: dir,
		raftAddr: "127.0.0.1:7000", apiAddr: "127.0.0.1:7100", join: "10.0.0.1:7946, http://10.0.0.2:7100",
		gossipBind: "127.0.0.1:7946", insecureGossip: true, voters: "http://10.0.0.3:7100",
		tokenFile: tokens, readTokenFile: reads, dnsAddr: "127.0.0.1:53", nameServers: "17=127.0.0.17:53,302=127.0.0.3:53",
		probeAllow: "10.1.0.0/16", allowLoopback: true, logLevel: "warn", nsBudget: 5000, rrlRate: 50, rrlSlip: 3}
	cfg, _, err := agentConfig(f, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Roles != agent.RoleControl|agent.RoleChecker|agent.RoleLocation || cfg.ID != "n1" || cfg.Region != "us-east" {
		t.Errorf("identity: %+v", cfg)
	}
	if len(cfg.Gossip.Join) != 1 || cfg.Gossip.Join[0] != "10.0.0.1:7946" ||
		len(cfg.Control.Join) != 1 || cfg.Control.Join[0] != "http://10.0.0.2:7100" {
		t.Errorf("join: gossip %v, control %v", cfg.Gossip.Join, cfg.Control.Join)
	}
	if cfg.Token != "r1" || len(cfg.Control.WriteTokens) != 1 || len(cfg.Control.ReadTokens) != 2 {
		t.Errorf("tokens: %q %v %v", cfg.Token, cfg.Control.WriteTokens, cfg.Control.ReadTokens)
	}
	if cfg.NameServers[17] != "127.0.0.17:53" || cfg.NameServers[302] != "127.0.0.3:53" || len(cfg.NameServers) != 2 {
		t.Errorf("name servers: %v", cfg.NameServers)
	}
	if cfg.NameServerBudget != 5000 || cfg.RRL.ResponsesPerSecond != 50 || cfg.RRL.Slip != 3 {
		t.Errorf("DNS limits: budget %d, rrl %+v", cfg.NameServerBudget, cfg.RRL)
	}
	if !cfg.Probe.AllowLoopback || len(cfg.Probe.Allow) != 1 || cfg.Probe.Allow[0] != netip.MustParsePrefix("10.1.0.0/16") {
		t.Errorf("probe: %+v", cfg.Probe)
	}
	if cfg.Probe.RootCAs != nil {
		t.Errorf("probe roots without -probe-ca: %v, want nil (the system's)", cfg.Probe.RootCAs)
	}
	f.probeCA = "testdata/probe-ca.pem"
	if cfg, _, err = agentConfig(f, &bytes.Buffer{}); err != nil || cfg.Probe.RootCAs == nil {
		t.Errorf("-probe-ca %s: roots %v, err %v", f.probeCA, cfg.Probe.RootCAs, err)
	}
	f.probeCA = ""
	if err := cfg.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	for _, bad := range []struct {
		edit func(*agentFlags)
		want string
	}{
		{func(f *agentFlags) { f.roles = "checker,resolver" }, `-roles: node: unknown role "resolver"`},
		{func(f *agentFlags) { f.nameServers = "ns1=127.0.0.1:53" }, `-ns: "ns1=127.0.0.1:53" is not index=host:port`},
		{func(f *agentFlags) { f.probeAllow = "10.1.0.0" }, "-probe-allow: netip.ParsePrefix"},
		{func(f *agentFlags) { f.probeCA = tokens }, "-probe-ca: no certificate in " + tokens},
		{func(f *agentFlags) { f.probeCA = filepath.Join(dir, "missing.pem") }, "-probe-ca: open "},
		{func(f *agentFlags) { f.logLevel = "loud" }, "-log-level: "},
		{func(f *agentFlags) { f.nsBudget = -5 }, "-ns-budget: -5"},
		{func(f *agentFlags) { f.rrlRate = -1 }, "-rrl -1"},
		{func(f *agentFlags) { f.rrlSlip = -2 }, "-rrl 50 -rrl-slip -2"},
		{func(f *agentFlags) { f.dnsUDPSockets = -1 }, "-dns-udp-sockets -1"},
	} {
		g := f
		bad.edit(&g)
		if _, _, err := agentConfig(g, &bytes.Buffer{}); err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("got %v, want %s...", err, bad.want)
		}
	}
}

// -dns-answer-cache and -dns-udp-sockets reach the node's configuration (agent's
// TestAnswerCacheAndUDPSocketsReachTheLocation follows them to the location's server), and
// their defaults are location's.
func TestAgentAnswerCacheFlags(t *testing.T) {
	for _, c := range []struct {
		args           []string
		cache, sockets int
	}{
		{nil, location.DefaultAnswerCache, 0},
		{[]string{"-dns-answer-cache", "-1", "-dns-udp-sockets", "4"}, -1, 4},
		{[]string{"-dns-answer-cache", "1000"}, 1000, 0},
	} {
		var f agentFlags
		fs := agentFlagSet(&f)
		if err := fs.Parse(append([]string{"-roles", "location", "-insecure-gossip", "-control", "http://127.0.0.1:7100"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := agentConfig(f, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.AnswerCache != c.cache || cfg.UDPSockets != c.sockets {
			t.Errorf("%q: answer cache %d, UDP sockets %d; want %d, %d", c.args, cfg.AnswerCache, cfg.UDPSockets, c.cache, c.sockets)
		}
	}
}

// One `vigil agent` with every role, in process: it bootstraps its voter, takes a document
// through its API, follows it with its own data plane, and answers DNS.
func TestAgentAllRoles(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api, dnsAddr, httpAddr := freePort(t), freePort(t), freePort(t)
	args := []string{"-roles", "control,checker,location", "-id", "solo", "-region", "us-east",
		"-data-dir", dir, "-raft-addr", freePort(t), "-api-addr", api, "-bootstrap", "-token-file", tokens,
		"-gossip-bind", freePort(t), "-insecure-gossip", "-dns", dnsAddr, "-http", httpAddr, "-log-level", "error"}
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
		"record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.7"}]}]}]}`
	waitUntil(t, 20*time.Second, "the voter to take the document", func() bool {
		code, _, err := request("PUT", "http://"+api+"/v1/document", doc)
		return err == nil && code == 200
	})
	waitUntil(t, 20*time.Second, "a DNS answer from the document", func() bool {
		m := new(dns.Msg)
		m.SetQuestion("www.solo.vigil.test.", dns.TypeA)
		r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, dnsAddr)
		return err == nil && len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == "192.0.2.7"
	})
	// The node's HTTP listener serves the status API and page beside /metrics.
	var verdicts struct {
		Location string `json:"location"`
		Checks   []struct {
			ID string `json:"id"`
		} `json:"checks"`
	}
	waitUntil(t, 20*time.Second, "the status API to list the check", func() bool {
		code, out, err := request("GET", "http://"+httpAddr+"/v1/verdicts", "")
		if err != nil || code != 200 || json.Unmarshal(out, &verdicts) != nil {
			return false
		}
		return len(verdicts.Checks) == 1 && verdicts.Checks[0].ID == "solo-api"
	})
	if verdicts.Location != "solo" {
		t.Errorf("verdicts of location %q, want solo", verdicts.Location)
	}
	code, page, err := request("GET", "http://"+httpAddr+"/", "")
	if err != nil || code != 200 || !strings.Contains(string(page), "<html") {
		t.Errorf("status page: HTTP %d, %v: %.200s", code, err, page)
	}
	code, metrics, err := request("GET", "http://"+httpAddr+"/metrics", "")
	if err != nil || code != 200 || !strings.Contains(string(metrics), "vigil_status_requests_total") {
		t.Errorf("metrics lack the status API's: HTTP %d, %v", code, err)
	}
}
