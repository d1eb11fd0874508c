package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/agent"
)

// -dnssec-secret-file gives a voter or location its seal secret (the first key of the file)
// and older secrets that only open (the others); a checker-only node refuses it; the
// insecure gossip-key fallback is its own flag and excludes the file; without either, the
// node has no secret (no silent fallback to the gossip key).
func TestAgentDNSSECSecretFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "dnssec.secret")
	gossipFile := filepath.Join(dir, "gossip.key")
	const cur, older = "Y3VycmVudC1kbnNzZWMtc2VjcmV0LTMyLWJ5dGVzISE=", "b2xkZXItZG5zc2VjLXNlY3JldC0zMi1ieXRlcyEhISE="
	if err := os.WriteFile(file, []byte("# demo\n"+cur+"\n"+older+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gossipFile, []byte(older+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := func(roles string) agentFlags {
		return agentFlags{roles: roles, id: "n1", region: "us-east", dataDir: dir, raftAddr: "127.0.0.1:7000",
			apiAddr: "127.0.0.1:7100", gossipBind: "127.0.0.1:7946", gossipKeyFile: gossipFile, dnsAddr: "127.0.0.1:53",
			logLevel: "warn", tokenFile: "", voters: "http://10.0.0.3:7100", dnssecSecretFile: file}
	}
	cfg, _, err := agentConfig(flags("control,location"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.DNSSECSecret) != "current-dnssec-secret-32-bytes!!" || len(cfg.DNSSECOlderSecrets) != 1 || string(cfg.DNSSECOlderSecrets[0]) != "older-dnssec-secret-32-bytes!!!!" {
		t.Fatalf("secret %q, older %q", cfg.DNSSECSecret, cfg.DNSSECOlderSecrets)
	}
	if cfg.InsecureDNSSECSecretFromGossipKey {
		t.Error("the insecure fallback is on without its flag")
	}

	// A checker-only node is refused the secret when the node is made.
	cfg, _, err = agentConfig(flags("checker"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "dnssec secret") {
		t.Errorf("a checker with the secret: %v, want a refusal", err)
	}

	f := flags("location")
	f.insecureDNSSECFromGossip = true
	if _, _, err := agentConfig(f, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Errorf("both flags: %v, want exclusive", err)
	}
	f.dnssecSecretFile = ""
	if cfg, _, err = agentConfig(f, &bytes.Buffer{}); err != nil || !cfg.InsecureDNSSECSecretFromGossipKey {
		t.Errorf("-insecure-dnssec-secret-from-gossip-key: %v, fallback %v", err, cfg.InsecureDNSSECSecretFromGossipKey)
	}
	f.dnssecSecretFile = filepath.Join(dir, "missing")
	f.insecureDNSSECFromGossip = false
	if _, _, err := agentConfig(f, &bytes.Buffer{}); err == nil || !strings.HasPrefix(err.Error(), "-dnssec-secret-file") {
		t.Errorf("a missing file: %v", err)
	}
	if cfg.Roles != agent.RoleLocation {
		t.Errorf("roles %v", cfg.Roles)
	}
}

// -dnssec-sign-budget sets the location's signing budget in new signatures a second; 0 leaves
// it to the location (measured from the CPU); a negative rate is refused with the flag's name.
func TestAgentDNSSECSignBudget(t *testing.T) {
	dir := t.TempDir()
	f := agentFlags{roles: "location", id: "n1", region: "us-east", dataDir: dir, gossipBind: "127.0.0.1:7946",
		insecureGossip: true, dnsAddr: "127.0.0.1:53", logLevel: "warn", voters: "http://10.0.0.3:7100"}
	cfg, _, err := agentConfig(f, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DNSSECSignBudget != 0 {
		t.Errorf("default budget %g, want 0 (measured by the location)", cfg.DNSSECSignBudget)
	}
	f.dnssecSignBudget = 12000
	if cfg, _, err = agentConfig(f, &bytes.Buffer{}); err != nil || cfg.DNSSECSignBudget != 12000 {
		t.Errorf("-dnssec-sign-budget 12000: %v, budget %g", err, cfg.DNSSECSignBudget)
	}
	f.dnssecSignBudget = -1
	if _, _, err := agentConfig(f, &bytes.Buffer{}); err == nil || !strings.HasPrefix(err.Error(), "-dnssec-sign-budget") {
		t.Errorf("-dnssec-sign-budget -1: %v, want a refusal naming the flag", err)
	}
	cfg.DNSSECSignBudget = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "dnssec sign budget") {
		t.Errorf("a negative budget in agent.Config: %v, want a refusal", err)
	}
}
