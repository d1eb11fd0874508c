package checker

// Status is a checker's reported status for one check, after rise and fall.
type Status uint8

// The statuses of a report.
const (
	// StatusUnknown: no probe result yet, so nothing is reported. A checker that is
	// starting is never "unhealthy" because it is warming up.
	StatusUnknown Status = iota
	// StatusHealthy: the check passes.
	StatusHealthy
	// StatusUnhealthy: the check fails.
	StatusUnhealthy
)

// String returns "unknown", "healthy" or "unhealthy".
func (s Status) String() string {
	switch s {
	case StatusHealthy:
		return "healthy"
	case StatusUnhealthy:
		return "unhealthy"
	}
	return "unknown"
}

// RiseFall is the rise/fall state of one check at one checker: the reported status and the
// run of identical results behind it. It is a value; Next returns the following state.
//
// The first result sets the status directly. After that the status turns unhealthy only
// after FailureThreshold consecutive failures, and healthy again only after
// SuccessThreshold consecutive successes.
type RiseFall struct {
	// Status is what the checker reports.
	Status Status
	// LastHealthy is the outcome of the latest result.
	LastHealthy bool
	// Consecutive counts the latest results with the same outcome as LastHealthy (it
	// saturates rather than overflows).
	Consecutive uint32
}

// Next applies one probe result (healthy or not) under the given thresholds (values below 1
// count as 1) and returns the new state and whether the reported status changed.
func (s RiseFall) Next(healthy bool, failureThreshold, successThreshold int) (RiseFall, bool) {
	if s.Consecutive > 0 && s.LastHealthy == healthy {
		if s.Consecutive < ^uint32(0) {
			s.Consecutive++
		}
	} else {
		s.LastHealthy, s.Consecutive = healthy, 1
	}
	before := s.Status
	switch {
	case s.Status == StatusUnknown && healthy:
		s.Status = StatusHealthy
	case s.Status == StatusUnknown:
		s.Status = StatusUnhealthy
	case healthy && s.Status == StatusUnhealthy && s.Consecutive >= threshold(successThreshold):
		s.Status = StatusHealthy
	case !healthy && s.Status == StatusHealthy && s.Consecutive >= threshold(failureThreshold):
		s.Status = StatusUnhealthy
	}
	return s, s.Status != before
}

func threshold(n int) uint32 {
	if n < 1 {
		return 1
	}
	return uint32(n)
}
