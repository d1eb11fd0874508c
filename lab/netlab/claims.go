package netlab

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/lab/oracle"
)

// detectionMargin is what a detection may take beyond interval × failure_threshold for a target's
// failure to show in every location's answers.
const detectionMargin = 2 * time.Second

// SlowDetections checks the detection bound on a judged run: every target failure shows in
// every location's answers within interval × failure_threshold + 2s of the check that probes
// it (measured by the oracle from the answers). It returns each location that took longer,
// or never showed it. A cut is detected through freshness instead (the oracle's own bound
// holds it), so only target-down events are held to this one.
func SlowDetections(run *oracle.Run, rep *oracle.Report) []string {
	var out []string
	for _, tm := range rep.Timings {
		if tm.Repair || tm.Event.Kind != oracle.EventTargetDown {
			continue
		}
		var bound time.Duration
		for id, target := range run.Topology.Checks {
			if target != tm.Event.Target {
				continue
			}
			if c, ok := run.Document.CheckByID(id); ok {
				bound = max(bound, c.Interval.Std()*time.Duration(c.FailureThreshold)+detectionMargin)
			}
		}
		if bound == 0 {
			continue
		}
		for _, loc := range slices.Sorted(maps.Keys(tm.ByLocation)) {
			if d := tm.ByLocation[loc]; d > bound {
				out = append(out, fmt.Sprintf("%s: %s took %v, more than %v", tm.Event, loc, d.Round(time.Millisecond), bound))
			}
		}
		for _, loc := range tm.Missing {
			out = append(out, fmt.Sprintf("%s: %s never showed it", tm.Event, loc))
		}
	}
	return out
}
