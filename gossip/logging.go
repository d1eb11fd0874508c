package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rate limits of memberlist's warnings and errors: a line of one kind (its text before the
// first "from=", so one peer's flood and another's share it) is logged once per
// repeatEvery; the others of that window are counted and said with the next one logged.
// memberlist logs a line per dropped message ("handler queue full, dropping message"): a
// 100,000-check pool whose deltas outran a checker's handler logged a million lines in 17
// minutes before this.
const (
	repeatEvery = 10 * time.Second
	maxKinds    = 64 // kinds remembered per window; beyond, lines of new kinds share otherKinds
	otherKinds  = "\x00other kinds"
)

// logWriter carries memberlist's log lines ("[WARN] memberlist: ...") into slog at their
// level, repeated warnings and errors at most once per repeatEvery each.
type logWriter struct {
	l   *slog.Logger
	now func() time.Time

	// refused, when set, counts and logs (at a bounded rate) a node memberlist ignored for
	// its versions, or that the admission delegate refused (admission.go): memberlist logs a
	// line naming each one, which a key holder could multiply by the thousand.
	refused func(reason, name string)

	mu     sync.Mutex
	window time.Time      // start of the current window
	seen   map[string]int // kinds logged in the window, and how many more came
}

// newMemberlistLogger returns the logger for memberlist; refused, when not nil, takes over
// memberlist's lines about nodes ignored or refused (see logWriter.refused).
func newMemberlistLogger(l *slog.Logger, now func() time.Time, refused func(reason, name string)) *log.Logger {
	return log.New(&logWriter{l: l, now: now, refused: refused, seen: map[string]int{}}, "", 0)
}

// ignoredNode recognises memberlist's line about an alive message it ignored, or that the
// admission delegate refused, and returns the reason and the node's name. The refusals
// are counted and summarised by the pool instead of logged line by line.
func ignoredNode(line string) (reason, name string, ok bool) {
	var rest string
	for _, p := range []string{"Ignoring an alive message for '", "ignoring alive message for '"} {
		if i := strings.Index(line, p); i >= 0 {
			rest = line[i+len(p):]
			break
		}
	}
	if rest == "" {
		return "", "", false
	}
	switch {
	case strings.Contains(rest, "because protocol version(s) are wrong"), strings.Contains(rest, "because Vsn is not present"):
		reason = refusedVersions
	case strings.Contains(rest, errRefusedPrefix):
		reason = "" // the delegate counted and logged it already
	default:
		return "", "", false
	}
	// The name is quoted as is: it may hold "'", so it ends at the last "' (" or "': ".
	end := max(strings.LastIndex(rest, "' ("), strings.LastIndex(rest, "': "))
	if end >= 0 {
		name = rest[:end]
	}
	return reason, name, true
}

// Write logs one memberlist line.
func (w *logWriter) Write(p []byte) (int, error) {
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
	if w.refused != nil {
		if reason, name, ok := ignoredNode(string(line)); ok {
			if reason != "" {
				w.refused(reason, name)
			}
			return len(p), nil
		}
	}
	if level < slog.LevelWarn {
		w.l.Log(context.Background(), level, string(line), "component", "memberlist")
		return len(p), nil
	}
	msg, more := w.admit(string(line))
	if msg == "" {
		return len(p), nil
	}
	if more > 0 {
		w.l.Log(context.Background(), level, msg, "component", "memberlist", "repeated", more,
			"note", "like lines in the last "+strconv.Itoa(int(repeatEvery/time.Second))+"s were not logged")
	} else {
		w.l.Log(context.Background(), level, msg, "component", "memberlist")
	}
	return len(p), nil
}

// admit decides whether line is logged: the first of its kind in the window is; the others
// are counted, and the count goes with the next line of the kind logged in a later window.
func (w *logWriter) admit(line string) (string, int) {
	kind := line
	if i := strings.Index(line, "from="); i >= 0 {
		kind = line[:i]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if now.Sub(w.window) >= repeatEvery {
		w.window = now
		prev := w.seen
		w.seen = map[string]int{}
		if n := prev[kind]; n > 0 {
			w.seen[kind] = 0
			return line, n
		}
	}
	n, ok := w.seen[kind]
	if !ok && len(w.seen) >= maxKinds {
		// Beyond maxKinds kinds (lines that name a node each, say), the rest of the window
		// shares one: its first line is logged, the others counted.
		kind = otherKinds
		n, ok = w.seen[kind]
	}
	switch {
	case !ok:
		w.seen[kind] = 0
		return line, 0
	}
	w.seen[kind] = n + 1
	return "", 0
}
