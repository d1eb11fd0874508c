package sdnotify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// listen opens a unixgram socket as the service manager does, at name (a path, or @abstract).
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// next reads one datagram, or fails after a generous wait.
func next(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no datagram: %v", err)
	}
	return string(buf[:n])
}

// TestWatch runs the whole exchange over real sockets, a path and an abstract name: a status
// while not ready, READY=1 once ready, STOPPING=1 at the end.
func TestWatch(t *testing.T) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	for name, socket := range map[string]string{
		"path":     filepath.Join(t.TempDir(), "notify"),
		"abstract": "@vigil-pkg-sdnotify-" + hex.EncodeToString(b),
	} {
		t.Run(name, func(t *testing.T) {
			conn := listen(t, socket)
			var polls atomic.Int32
			ready := func() (bool, string) {
				if polls.Add(1) < 4 {
					return false, "warming up"
				}
				return true, ""
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				New(socket).Watch(ctx, ready, 5*time.Millisecond, func(err error) { t.Error(err) })
			}()
			if got := next(t, conn); got != "STATUS=warming up" {
				t.Errorf("first datagram %q, want the reason it is not ready", got)
			}
			if got := next(t, conn); got != "READY=1\nSTATUS=ready" {
				t.Errorf("second datagram %q, want READY=1 (the reason is sent once, not every poll)", got)
			}
			cancel()
			if got := next(t, conn); got != "STOPPING=1" {
				t.Errorf("last datagram %q, want STOPPING=1", got)
			}
			<-done
			if n := polls.Load(); n != 4 {
				t.Errorf("ready asked %d times, want 4: once ready, the watch stops asking", n)
			}
		})
	}
}

// TestNoSocket: without $NOTIFY_SOCKET there is nothing to tell, and a socket nobody listens
// on is an error that says what to check.
func TestNoSocket(t *testing.T) {
	var n *Notifier = New("")
	if err := n.Notify("READY=1"); err != nil {
		t.Errorf("nil notifier: %v", err)
	}
	n.Watch(t.Context(), func() (bool, string) { t.Error("asked"); return true, "" }, time.Millisecond, nil)
	err := New(filepath.Join(t.TempDir(), "absent")).Notify("READY=1")
	if err == nil {
		t.Error("sent to a socket that does not exist")
	}
}
