package control

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestRaftLogsToSlog: raft's hclog lines arrive in slog with their level and message.
func TestRaftLogsToSlog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHCLogger(log, slog.LevelInfo)
	h.Warn("heartbeat timeout reached", "last-leader-addr", "127.0.0.1:7000")
	h.Debug("dropped: below the level")
	h.Error("failed to contact", "id", "v2")
	out := buf.String()
	for _, want := range []string{`level=WARN msg="raft: heartbeat timeout reached: last-leader-addr=127.0.0.1:7000"`, `level=ERROR msg="raft: failed to contact: id=v2"`, "component=raft"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "dropped") {
		t.Errorf("a debug line passed an info logger:\n%s", out)
	}
}
