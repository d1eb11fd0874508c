package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// logWriter carries memberlist's log lines ("[WARN] memberlist: ...") into slog at their
// level.
type logWriter struct{ l *slog.Logger }

func newMemberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(logWriter{l}, "", 0)
}

// Write logs one memberlist line.
func (w logWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, x := range []struct {
		tag   string
		level slog.Level
	}{{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError}} {
		if bytes.HasPrefix(line, []byte(x.tag)) {
			level = x.level
			line = bytes.TrimSpace(line[len(x.tag):])
			break
		}
	}
	w.l.Log(context.Background(), level, string(line), "component", "memberlist")
	return len(p), nil
}
