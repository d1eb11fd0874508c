package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Under systemd's Type=notify, vigil agent tells $NOTIFY_SOCKET why it is not ready, READY=1
// once its /readyz says 200 (not before), and STOPPING=1 when it is told to stop. The socket
// is a real unixgram socket with an abstract name, as systemd gives one.
func TestAgentNotifiesSystemd(t *testing.T) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	socket := "@vigil-pkg-agent-" + hex.EncodeToString(b)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", socket)
	next := func(within time.Duration) string {
		buf := make([]byte, 4096)
		_ = conn.SetReadDeadline(time.Now().Add(within))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification within %v: %v", within, err)
		}
		return string(buf[:n])
	}

	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api, dnsAddr, httpAddr := freePort(t), freePort(t), freePort(t)
	args := []string{"-roles", "control,checker,location", "-id", "notify", "-region", "us-east",
		"-data-dir", dir, "-raft-addr", freePort(t), "-api-addr", api, "-bootstrap", "-token-file", tokens,
		"-gossip-bind", freePort(t), "-insecure-gossip", "-dns", dnsAddr, "-http", httpAddr, "-log-level", "error"}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runAgent(ctx, args, &stdout, &stderr) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop within 20s")
		}
	}()

	if m := next(30 * time.Second); !strings.HasPrefix(m, "STATUS=not ready: ") {
		t.Fatalf("first notification %q, want the reason it is not ready", m)
	}
	if code, _, err := request("GET", "http://"+httpAddr+"/readyz", ""); err == nil && code != 503 {
		t.Errorf("/readyz %d without a configuration, want 503", code)
	}
	doc := `{"regions": ["us-east", "eu-west", "sa-east"], "zones": [{"name": "notify.vigil.test",
		"record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.7"}]}]}]}`
	waitUntil(t, 20*time.Second, "the voter to take the document", func() bool {
		code, _, err := request("PUT", "http://"+api+"/v1/document", doc)
		return err == nil && code == 200
	})
	for {
		m := next(60 * time.Second)
		if !strings.HasPrefix(m, "READY=1") {
			if !strings.HasPrefix(m, "STATUS=not ready: ") {
				t.Fatalf("notification %q before READY=1, want only statuses", m)
			}
			continue
		}
		if code, body, err := request("GET", "http://"+httpAddr+"/readyz", ""); err != nil || code != 200 {
			t.Errorf("READY=1 while /readyz says %d %s (%v)", code, body, err)
		}
		break
	}
	cancel()
	if m := next(20 * time.Second); m != "STOPPING=1" {
		t.Errorf("notification at the end %q, want STOPPING=1", m)
	}
	if code := <-done; code != 0 {
		t.Errorf("agent exit %d: %s", code, stderr.String())
	}
	done <- 0 // for the deferred wait
}
