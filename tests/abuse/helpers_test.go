package abuse

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/calibrate"
)

// row logs one RESILIENCE.md abuse row: what was tried | how many | what got through |
// reproduce.
func row(t *testing.T, tried, howMany, through string) {
	t.Helper()
	t.Logf("| %s | %s | %s | `go test -run '%s$' -v ./tests/abuse/` |", tried, howMany, through, t.Name())
}

// logger discards logs unless VIGIL_TEST_LOG is set.
func logger() *slog.Logger {
	if os.Getenv("VIGIL_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// waitFor polls cond every 20 ms until it holds or within has passed; it reports whether
// cond held.
func waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// settled waits until cond holds for within on an idle machine, scaled by the slowdown measured
// meanwhile (internal/calibrate): for a test's set-up (a pool formed, a node gone), never for
// a window that an attack's measurement depends on, which waitFor keeps fixed.
func settled(within time.Duration, cond func() bool) bool {
	m := calibrate.Start()
	defer m.Stop()
	for !cond() {
		if !m.Within(within) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}

// itoa writes n with thousands separators.
func itoa(n int) string {
	s := strconv.Itoa(n)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}

// countingHandler is a slog handler that counts the records whose message contains match.
type countingHandler struct {
	match string
	n     atomic.Int64
}

// Enabled implements slog.Handler.
func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.n.Add(1)
	}
	return nil
}

// WithAttrs implements slog.Handler; the attributes are not kept.
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup implements slog.Handler.
func (h *countingHandler) WithGroup(string) slog.Handler { return h }

func (h *countingHandler) count() int { return int(h.n.Load()) }
