package gossip

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestMemberlistLogRepeats: a flood of one warning (from several peers) is logged once per
// window, the next window's first line says how many were left out; other kinds and lower
// levels pass.
func TestMemberlistLogRepeats(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	l := newMemberlistLogger(slog.New(slog.NewTextHandler(&out, nil)), func() time.Time { return now }, nil)
	for i := range 1000 {
		l.Printf("[WARN] memberlist: handler queue full, dropping message (8) from=127.0.0.1:%d", 7000+i%5)
	}
	l.Printf("[ERR] memberlist: failed to receive: timeout from=127.0.0.1:7001")
	l.Printf("[INFO] memberlist: a join")
	l.Printf("[INFO] memberlist: a join")
	if got := strings.Count(out.String(), "handler queue full"); got != 1 {
		t.Errorf("%d lines of the flood in the first window, want 1:\n%s", got, out.String())
	}
	if strings.Count(out.String(), "failed to receive") != 1 || strings.Count(out.String(), "a join") != 2 {
		t.Errorf("another kind or a lower level was held back:\n%s", out.String())
	}
	out.Reset()
	now = now.Add(repeatEvery)
	l.Printf("[WARN] memberlist: handler queue full, dropping message (8) from=127.0.0.1:7000")
	if s := out.String(); strings.Count(s, "handler queue full") != 1 || !strings.Contains(s, "repeated=999") {
		t.Errorf("next window: %q, want the line with repeated=999", s)
	}
}
