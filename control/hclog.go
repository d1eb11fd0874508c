package control

import (
	"bytes"
	"context"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger returns an hclog.Logger (raft's logger) that passes raft's lines to log.
func newHCLogger(log *slog.Logger, min slog.Level) hclog.Logger {
	lvl := hclog.Info
	switch {
	case min <= slog.LevelDebug:
		lvl = hclog.Debug
	case min >= slog.LevelError:
		lvl = hclog.Error
	case min >= slog.LevelWarn:
		lvl = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:            "raft",
		Level:           lvl,
		Output:          slogWriter{log},
		DisableTime:     true,
		IncludeLocation: false,
	})
}

// slogWriter turns hclog's "[LEVEL] name: message: key=value" lines into slog records.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		s := strings.TrimSpace(string(line))
		if s == "" {
			continue
		}
		level := slog.LevelInfo
		for tag, l := range map[string]slog.Level{"[ERROR]": slog.LevelError, "[WARN]": slog.LevelWarn, "[DEBUG]": slog.LevelDebug, "[TRACE]": slog.LevelDebug, "[INFO]": slog.LevelInfo} {
			if rest, ok := strings.CutPrefix(s, tag); ok {
				level, s = l, strings.TrimSpace(rest)
				break
			}
		}
		w.log.Log(context.Background(), level, s, "component", "raft")
	}
	return len(p), nil
}
