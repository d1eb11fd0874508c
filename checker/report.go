package checker

import (
	"net/netip"
	"time"
)

// Why a report is withdrawn.
const (
	// WithdrawRemoved: the check is no longer assigned to this checker.
	WithdrawRemoved = "removed"
	// WithdrawChanged: the check's probe changed (target, protocol, ...); the old status
	// no longer describes it, and the next result reports anew.
	WithdrawChanged = "check_changed"
	// WithdrawIsolated: this checker cannot reach anything, so its view says nothing about
	// the targets.
	WithdrawIsolated = "checker_isolated"
	// WithdrawStopped: the checker stopped.
	WithdrawStopped = "checker_stopped"
)

// Report is a checker's current word on one check: the row of the report table that this
// checker owns, as gossip carries it. A report is emitted when its status is first known,
// when it changes, and when it is withdrawn.
type Report struct {
	// CheckID names the check.
	CheckID string
	// Status is healthy or unhealthy (never unknown in an emitted report that is not
	// withdrawn).
	Status Status
	// Withdrawn is true when this checker no longer reports on the check; Withdraw says why.
	Withdrawn bool
	Withdraw  string
	// Consecutive counts the latest results with the same outcome.
	Consecutive int
	// Reason and Message are those of the latest result.
	Reason  Reason
	Message string
	// Latency is the latest probe's total time (Timings.Total).
	Latency time.Duration
	// Timings are the latest probe's phases: DNS, connect, TLS, first byte, total.
	Timings Timings
	// Address is the address the latest probe reached (or tried).
	Address netip.AddrPort
	// CertNotAfter is the expiry of the target's certificate, for HTTPS checks.
	CertNotAfter time.Time
	// At is when the latest result was taken.
	At time.Time
	// Seq orders this checker's reports: it grows by one with every report emitted, so a
	// replica keeps the report with the higher Seq.
	Seq uint64
}

// report builds s's report as it stands (without a sequence number).
func (s *slot) report() Report {
	return Report{
		CheckID:      s.check.ID,
		Status:       s.rf.Status,
		Consecutive:  int(s.rf.Consecutive),
		Reason:       s.last.Reason,
		Message:      s.last.Message,
		Latency:      s.last.Timings.Total,
		Timings:      s.last.Timings,
		Address:      s.last.Address,
		CertNotAfter: s.last.CertNotAfter,
		At:           s.last.Start,
	}
}
