package tlsconf

import (
	"bytes"
	"crypto/ed25519"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The same secret derives the same CA certificate and key on every voter; another secret
// derives another; a secret of the wrong size derives nothing.
func TestSecretCADeterministic(t *testing.T) {
	s1, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	a, ka, err := SecretCA(s1)
	if err != nil {
		t.Fatal(err)
	}
	b, kb, err := SecretCA(bytes.Clone(s1))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Raw, b.Raw) || !ka.Equal(kb) {
		t.Error("the same secret derived two CAs")
	}
	c, _, err := SecretCA(s2)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Raw, c.Raw) || a.PublicKey.(ed25519.PublicKey).Equal(c.PublicKey) {
		t.Error("two secrets derived the same CA")
	}
	if _, _, err := SecretCA(s1[:16]); err == nil {
		t.Error("a 16-byte secret derived a CA")
	}
}

// handshake runs a TLS handshake between a server and a client store over loopback and
// returns the server's error.
func handshake(t *testing.T, server, client *Store) error {
	t.Helper()
	peer := Peer{Roles: []string{RoleControl}, SkipHostname: true}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		tc := tls.Server(c, server.ServerConfig(peer))
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		errc <- tc.Handshake()
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), client.ClientConfig(peer))
	if err == nil {
		// The server verifies the client's certificate after the client's last flight.
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Read(make([]byte, 1))
		c.Close()
	}
	return <-errc
}

// Voters of one secret complete mutual TLS with each other; a voter of another secret, or
// one whose leaf lacks the control role, is refused.
func TestSecretStoreHandshake(t *testing.T) {
	s1, _ := NewSecret()
	s2, _ := NewSecret()
	store := func(secret []byte, name string, roles ...string) *Store {
		st, err := NewSecretStore(secret, name, roles, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := store(s1, "a", RoleControl), store(s1, "b", RoleControl)
	if err := handshake(t, a, b); err != nil {
		t.Errorf("same secret: %v", err)
	}
	if err := handshake(t, a, store(s2, "m", RoleControl)); err == nil {
		t.Error("another secret's certificate was accepted")
	}
	if err := handshake(t, a, store(s1, "c", RoleChecker)); err == nil || !strings.Contains(err.Error(), "roles") {
		t.Errorf("a certificate without the control role: %v, want refused for its roles", err)
	}
}

// A secret file is written 0600, read back, never replaced; a bad one is refused with what
// it should hold, and a readable one is warned of.
func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "control", "raft-secret")
	s, _ := NewSecret()
	if err := WriteSecretFile(path, s); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	got, warning, err := ReadSecretFile(path)
	if err != nil || !bytes.Equal(got, s) || warning != "" {
		t.Fatalf("read back: %x %q %v", got, warning, err)
	}
	if err := WriteSecretFile(path, s); err == nil {
		t.Error("an existing secret was replaced")
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not base64 of 32 bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadSecretFile(bad); err == nil || !strings.Contains(err.Error(), "base64 of 32") {
		t.Errorf("a bad secret file: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, warning, err := ReadSecretFile(path); err != nil || !strings.Contains(warning, "chmod 600") {
		t.Errorf("a readable secret file: warning %q, err %v", warning, err)
	}
}
