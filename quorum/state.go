package quorum

import "fmt"

// State is the outcome of a verdict.
type State uint8

// The states of a verdict. The zero value is StateUnknown: a location that has never decided
// knows nothing.
const (
	// StateUnknown: too few fresh reports for longer than the hold time, or never enough.
	// DNS serves it as healthy (fail open).
	StateUnknown State = iota
	// StateHealthy: the quorum says the endpoint works.
	StateHealthy
	// StateUnhealthy: the quorum says it does not.
	StateUnhealthy
)

var stateNames = [...]string{
	StateUnknown:   "unknown",
	StateHealthy:   "healthy",
	StateUnhealthy: "unhealthy",
}

// String returns "unknown", "healthy" or "unhealthy".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// MarshalText writes the state's name, so JSON shows states as strings.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateNames) {
		return nil, fmt.Errorf("quorum: invalid state %d", uint8(s))
	}
	return []byte(stateNames[s]), nil
}

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	for i, name := range stateNames {
		if string(b) == name {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("quorum: invalid state %q (want healthy, unhealthy or unknown)", b)
}

// invert swaps healthy and unhealthy; unknown stays unknown.
func (s State) invert() State {
	switch s {
	case StateHealthy:
		return StateUnhealthy
	case StateUnhealthy:
		return StateHealthy
	}
	return s
}
