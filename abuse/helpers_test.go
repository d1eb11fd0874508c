package abuse

import (
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"
)

// row logs one RESILIENCE.md abuse row: what was tried | how many | what got through |
// reproduce.
func row(t *testing.T, tried, howMany, through string) {
	t.Helper()
	t.Logf("| %s | %s | %s | `go test -run '%s$' -v ./abuse/` |", tried, howMany, through, t.Name())
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
