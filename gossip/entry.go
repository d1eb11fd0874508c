package gossip

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-dns/vigil/checker"
)

// Limits on what a report carries, so that every delta fits in one UDP packet.
const (
	// MaxIDLen is the longest node or check id, in bytes.
	MaxIDLen = 128
	// MaxReasonLen is the longest reason a report carries; longer reasons are cut.
	MaxReasonLen = 160
	// MaxDeltaSize bounds the encoded size of one delta: far under memberlist's 1,400-byte
	// UDP packet, with room for its compound-message overhead.
	MaxDeltaSize = 600
)

// statusEnd bounds the statuses a report carries: checker.Status, unknown, healthy or
// unhealthy, one byte on the wire.
const statusEnd = checker.StatusUnhealthy + 1

// Entry is one check in a checker's row: the checker's report for that check, as the wire
// carries it and the table holds it. It is the one form of a report between a checker and a
// location: the checker's node builds it from a checker.Report, a location's verdict engine
// takes it from the change feed (CellChange), and the table's reads hand it out in quorum's
// vocabulary (quorum.Report, see Node.ReportsFor).
type Entry struct {
	// Status is the status after rise/fall thresholds.
	Status checker.Status
	// Consecutive is how many probe results in a row agreed with Status.
	Consecutive uint32
	// Latency is the latency of the last probe, kept to the microsecond.
	Latency time.Duration
	// Reason says why, e.g. "http 503" or "dial: connection refused"; at most MaxReasonLen
	// bytes.
	Reason string
}

// validID checks a node or check id.
func validID(kind, id string) error {
	if id == "" {
		return fmt.Errorf("gossip: empty %s id", kind)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("gossip: %s id is %d bytes, more than %d", kind, len(id), MaxIDLen)
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("gossip: %s id %q is not UTF-8", kind, id)
	}
	return nil
}

// clampReason cuts a longer reason to its first MaxReasonLen bytes, less what is not UTF-8
// there (a rune the cut split, or bytes that were never UTF-8).
func clampReason(s string) string {
	if len(s) <= MaxReasonLen {
		return s
	}
	return strings.ToValidUTF8(s[:MaxReasonLen], "")
}
