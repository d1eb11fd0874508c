//go:build !race

package checker

// raceEnabled is true when the race detector is on; memory figures mean nothing then.
const raceEnabled = false
