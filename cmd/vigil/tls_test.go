package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// TestTLSInitAndAgentFlags: vigil tls init writes a CA and certificates with their roles and
// hosts; the agent's three TLS flags together give the node its certificate store, and a
// voter with them needs no write token.
func TestTLSInitAndAgentFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	var out, errb bytes.Buffer
	if code := runTLS(context.Background(), []string{"init", "-days", "30", dir, "control-1=control@10.0.0.1", "node-1=checker+location"}, &out, &errb); code != 0 {
		t.Fatalf("tls init: %d %s", code, errb.String())
	}
	s, err := tlsconf.Load(tlsconf.Files{Cert: filepath.Join(dir, "node-1.pem"), Key: filepath.Join(dir, "node-1-key.pem"), CA: filepath.Join(dir, "ca.pem")}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tlsconf.Roles(s.Leaf()); strings.Join(got, "+") != "checker+location" {
		t.Errorf("node-1 roles %v", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "node-1-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode: %v %v", fi.Mode(), err)
	}
	for _, bad := range [][]string{{"init", dir, "x"}, {"init", dir, "x=admin"}, {"init", dir, "../x=control"}} {
		if code := runTLS(context.Background(), bad, &out, &errb); code == 0 {
			t.Errorf("tls %v succeeded", bad)
		}
	}
	f := agentFlags{roles: "control", id: "control-1", dataDir: t.TempDir(), raftAddr: "127.0.0.1:7000", apiAddr: "127.0.0.1:7100",
		logLevel: "warn", tlsCert: filepath.Join(dir, "control-1.pem"), tlsKey: filepath.Join(dir, "control-1-key.pem"),
		tlsCA: filepath.Join(dir, "ca.pem"), tlsRequireClientCert: true, bootstrap: true}
	cfg, _, err := agentConfig(f, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || !cfg.Control.RequireClientCert || cfg.Control.ServerTLS != nil || cfg.WatcherClient != nil {
		t.Errorf("TLS: store %v, require %v, server TLS %v, watcher client %v", cfg.TLS != nil, cfg.Control.RequireClientCert, cfg.Control.ServerTLS, cfg.WatcherClient)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("a voter with TLS and no token: %v", err)
	}
}
