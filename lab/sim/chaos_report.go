package sim

// A chaos run's part of the report: the verdict changes, the control-plane writes and, around
// the first violations, what the location answered and decided.

import (
	"fmt"
	"strings"
	"time"
)

// VerdictChanges counts the verdict changes after the network was ready, and those to
// unhealthy.
func (r Result) VerdictChanges() (all, unhealthy int) {
	for _, c := range r.History.Changes {
		if !r.ReadyAt.IsZero() && c.At.After(r.ReadyAt) {
			all++
			if !c.Serving {
				unhealthy++
			}
		}
	}
	return all, unhealthy
}

// writeChaos adds the verdict changes and the control-plane writes of a run to a report.
func (r Result) writeChaos(b *strings.Builder) {
	if !r.ReadyAt.IsZero() {
		fmt.Fprintf(b, "  ready at               %s (the timeline's +0)\n", r.ReadyAt.Format("15:04:05.000"))
	}
	all, bad := r.VerdictChanges()
	fmt.Fprintf(b, "  verdict changes        %d after ready (%d to a verdict not served)\n", all, bad)
	if w := r.Writes; w != nil {
		fmt.Fprintf(b, "  control writes         %d attempted, %d acknowledged, %d failed (may or may not have applied), %d skipped (key not checked yet)\n",
			w.Attempted, w.Acknowledged, w.Failed, w.Skipped)
		fmt.Fprintf(b, "  acknowledged checked   %d of %d, lost %d (overwritten by a late failed write %d, read behind an acknowledged index %d, unchecked %d)\n",
			w.Checked, w.Acknowledged, w.Lost, w.Overwritten, w.StaleReads, w.Unchecked)
		if w.ReadBack != "" {
			fmt.Fprintf(b, "  last read back failed  %s\n", w.ReadBack)
		}
		for _, p := range w.Problems {
			fmt.Fprintf(b, "  WRITE %s\n", p)
		}
		r.writeEvidence(b)
	}
}

// evidenceViolations bounds the violations whose neighbourhood a chaos report prints.
const evidenceViolations = 3

// writeEvidence prints, for the first violations, what the same location answered within a
// second of the violation and its verdict changes within ten seconds, to tell the system's
// fault from the model's.
func (r Result) writeEvidence(b *strings.Builder) {
	for i, v := range r.Audit.Violations {
		if i == evidenceViolations {
			break
		}
		l, at := v.Answer.Location, v.Answer.Sent
		fmt.Fprintf(b, "  around violation %d (%s at %s):\n", i+1, v.Answer.Name, l)
		for _, a := range r.History.Answers {
			if a.Location == l && a.Sent.After(at.Add(-time.Second)) && a.Sent.Before(at.Add(time.Second)) {
				fmt.Fprintf(b, "    answer %v\n", a)
			}
		}
		for _, c := range r.History.Changes {
			if c.Location == l && c.At.After(at.Add(-10*time.Second)) && c.At.Before(at.Add(10*time.Second)) {
				fmt.Fprintf(b, "    change %v (after %s)\n", c, c.After.Format("15:04:05.000"))
			}
		}
	}
}
