package quorum

import "time"

// Report is one checker's latest status for one check, as this location holds it: the cell of
// the checker's row that gossip carries (gossip.Entry), where it stands in the row, and when
// this location last heard that checker make progress. It is the one report vocabulary of a
// location: the gossip table hands reports out as Reports (gossip.Pool.ReportsFor), the
// verdict engine gives them to Evaluate and Explain, and the status API shows them. A location
// holds at most one report per checker and check; Evaluate counts the reports it is given. A
// checker that withdraws its report (it left the check's shard, or it cannot reach anything)
// removes it from the table, so a withdrawn report is not given: there is no withdrawn vote.
type Report struct {
	// Checker identifies the checker node that owns the report.
	Checker string
	// Region is the checker's region.
	Region string
	// Healthy is the checker's status after its rise/fall thresholds.
	Healthy bool
	// Reason says why the checker holds its status, e.g. "HTTP 503" or "left the shard".
	Reason string
	// Latency is the duration of the checker's last probe.
	Latency time.Duration
	// Sequence is the checker's sequence number for this row; it grows with every change.
	Sequence uint64
	// LastProgress is when this location last heard the checker make progress (a new sequence
	// or a heartbeat), by this location's own clock. The zero time means never.
	LastProgress time.Time
}

// Fresh reports whether the report counts at now under window: the package's freshness rule
// (Fresh) applied to its LastProgress.
func (r Report) Fresh(now time.Time, window time.Duration) bool {
	return Fresh(r.LastProgress, now, window)
}

// VoteStatus is what one report contributes to a verdict.
type VoteStatus uint8

// The contributions of a report.
const (
	// VoteHealthy: a fresh report that says healthy; it counts.
	VoteHealthy VoteStatus = iota
	// VoteUnhealthy: a fresh report that says unhealthy; it counts.
	VoteUnhealthy
	// VoteStale: the location has not heard the checker within the freshness window; the
	// report counts neither way.
	VoteStale
)

var voteNames = [...]string{
	VoteHealthy:   "healthy",
	VoteUnhealthy: "unhealthy",
	VoteStale:     "stale",
}

// String returns "healthy", "unhealthy" or "stale".
func (v VoteStatus) String() string {
	if int(v) < len(voteNames) {
		return voteNames[v]
	}
	return "invalid"
}

// MarshalText writes the status's name, so JSON shows it as a string.
func (v VoteStatus) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Counted reports whether a report with this status counts toward the verdict.
func (v VoteStatus) Counted() bool { return v == VoteHealthy || v == VoteUnhealthy }

// classify decides what r contributes at now under p.
func classify(p *Policy, r *Report, now time.Time) VoteStatus {
	switch {
	case !Fresh(r.LastProgress, now, p.FreshnessWindow):
		return VoteStale
	case r.Healthy:
		return VoteHealthy
	default:
		return VoteUnhealthy
	}
}
