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

// Half a TLS configuration is an error for the control role, saying what to add, instead of
// raft left without the certificates; with raft's credentials chosen otherwise
// (-raft-secret-file) the certificate serves the API alone, as it does for other roles.
func TestAgentHalfTLSRefused(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := runTLS(context.Background(), []string{"init", "-days", "30", dir, "control-1=control@127.0.0.1"}, &out, &errb); code != 0 {
		t.Fatalf("tls init: %d %s", code, errb.String())
	}
	secretFile := filepath.Join(dir, "raft-secret")
	secret, err := tlsconf.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, tlsconf.EncodeSecret(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, key, ca := filepath.Join(dir, "control-1.pem"), filepath.Join(dir, "control-1-key.pem"), filepath.Join(dir, "ca.pem")
	base := agentFlags{roles: "control", id: "control-1", dataDir: t.TempDir(), raftAddr: "127.0.0.1:7000",
		apiAddr: "127.0.0.1:7100", logLevel: "warn", bootstrap: true}
	for _, c := range []struct {
		name string
		edit func(*agentFlags)
		want string // "" means accepted
	}{
		{"cert and key without CA", func(f *agentFlags) { f.tlsCert, f.tlsKey = cert, key }, "-tls-cert and -tls-key without -tls-ca"},
		{"CA alone", func(f *agentFlags) { f.tlsCA = ca }, "-tls-ca without -tls-cert and -tls-key"},
		{"cert without key", func(f *agentFlags) { f.tlsCert, f.tlsCA = cert, ca }, "-tls-cert and -tls-key go together"},
		{"key without cert", func(f *agentFlags) { f.tlsKey = key }, "-tls-cert and -tls-key go together"},
		{"checker: cert without key", func(f *agentFlags) { f.roles, f.region, f.tlsCert = "checker", "us-east", cert }, "-tls-cert and -tls-key go together"},
		{"cert and key with a raft secret: API over TLS", func(f *agentFlags) { f.tlsCert, f.tlsKey, f.raftSecretFile = cert, key, secretFile }, ""},
		{"CA with a raft secret: verifies voters' APIs", func(f *agentFlags) { f.tlsCA, f.raftSecretFile = ca, secretFile }, ""},
		{"checker: cert and key without CA: API over TLS", func(f *agentFlags) { f.roles, f.region, f.tlsCert, f.tlsKey = "checker", "us-east", cert, key }, ""},
		{"all three", func(f *agentFlags) { f.tlsCert, f.tlsKey, f.tlsCA = cert, key, ca }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := base
			c.edit(&f)
			_, _, err := agentConfig(f, &bytes.Buffer{})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted; want an error %q", c.want)
			case c.want != "" && !strings.HasPrefix(err.Error(), c.want):
				t.Fatalf("error %q; want %q...", err, c.want)
			}
			if c.want != "" && !strings.Contains(err.Error(), "give") && !strings.Contains(err.Error(), "Add") {
				t.Errorf("the error %q does not say what to add", err)
			}
		})
	}

	// Raft credentials of two kinds, or insecure beside credentials, do not validate.
	for _, edit := range []func(*agentFlags){
		func(f *agentFlags) { f.tlsCert, f.tlsKey, f.tlsCA, f.raftSecretFile = cert, key, ca, secretFile },
		func(f *agentFlags) { f.tlsCert, f.tlsKey, f.tlsCA, f.insecureRaftPlaintext = cert, key, ca, true },
		func(f *agentFlags) { f.raftSecretFile, f.insecureRaftPlaintext = secretFile, true },
	} {
		f := base
		edit(&f)
		f.tokenFile = ""
		cfg, _, err := agentConfig(f, &bytes.Buffer{})
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), "raft") {
			t.Errorf("flags %+v: %v, want an error about raft's credentials", f, err)
		}
	}
}
