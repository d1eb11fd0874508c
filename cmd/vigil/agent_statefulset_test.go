package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Voters of a StatefulSet share one command line: -bootstrap-id makes the voter of that id
// bootstrap (and join nobody), the others join the voters' URLs; -raft-advertise reaches the
// control configuration as given.
func TestAgentBootstrapID(t *testing.T) {
	dir := t.TempDir()
	tokens, secret := filepath.Join(dir, "token"), filepath.Join(dir, "raft-secret")
	if err := os.WriteFile(tokens, []byte("w1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	urls := []string{"http://v-0.voters:7100", "http://v-1.voters:7100", "http://v-2.voters:7100"}
	base := agentFlags{roles: "control", dataDir: dir, raftAddr: "0.0.0.0:7000", apiAddr: "0.0.0.0:7100",
		tokenFile: tokens, raftSecretFile: secret, logLevel: "warn", bootstrapID: "v-0",
		join: strings.Join(urls, ",")}
	for _, c := range []struct {
		id        string
		bootstrap bool
		join      []string
	}{
		{"v-0", true, nil},
		{"v-1", false, urls},
		{"v-2", false, urls},
	} {
		f := base
		f.id, f.raftAdvertise = c.id, c.id+".voters:7000"
		cfg, _, err := agentConfig(f, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		if cfg.Control.Bootstrap != c.bootstrap || !slices.Equal(cfg.Control.Join, c.join) {
			t.Errorf("%s: bootstrap %v, join %v; want %v, %v", c.id, cfg.Control.Bootstrap, cfg.Control.Join, c.bootstrap, c.join)
		}
		if cfg.Control.RaftAdvertise != f.raftAdvertise {
			t.Errorf("%s: raft advertise %q, want %q", c.id, cfg.Control.RaftAdvertise, f.raftAdvertise)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: validate: %v", c.id, err)
		}
	}
	f := base
	f.id, f.bootstrap = "v-1", true
	if _, _, err := agentConfig(f, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-bootstrap and -bootstrap-id") {
		t.Errorf("-bootstrap with -bootstrap-id: %v, want a refusal", err)
	}
}
