package netlab

import (
	"fmt"
	"io"
	"strings"

	"github.com/vigil-dns/vigil/lab/oracle"
)

// WriteRow prints the run as one row of RESILIENCE.md's real-process table: scenario, wrong
// answers, flips, unanswered (and excused while a location was down), the slowest detection
// and the slowest recovery (with their events and the oracle's bounds), acknowledged writes
// checked/lost, and the command that reproduces it.
func WriteRow(w io.Writer, scenario, command string, res *Result) error {
	if res.Report == nil || res.Writes == nil {
		return fmt.Errorf("netlab: the run of %s was not judged", scenario)
	}
	rep := res.Report
	counted, excused := rep.UnansweredTotal()
	slowest := func(repair bool) string {
		var worst *oracle.Timing
		for i := range rep.Timings {
			tm := &rep.Timings[i]
			if tm.Repair == repair && (worst == nil || tm.Longest() > worst.Longest()) {
				worst = tm
			}
		}
		if worst == nil {
			return "nothing to " + map[bool]string{false: "detect", true: "recover"}[repair]
		}
		s := fmt.Sprintf("%.2f s (%s; bound %.1f s)", worst.Longest().Seconds(), timingWords(worst), worst.Bound.Seconds())
		if len(worst.Missing) > 0 {
			s += ", never at " + strings.Join(worst.Missing, ", ")
		}
		return s
	}
	_, err := fmt.Fprintf(w, "| %s | %d | %d | %d of %d (+%d while a location was down) | %s | %s | %d/%d of %d acknowledged | `%s` |\n",
		scenario, len(rep.Wrong), len(rep.Flips), counted, rep.Judged, excused, slowest(false), slowest(true),
		res.Writes.Checked, res.Writes.Lost, res.Writes.Acknowledged, command)
	return err
}

// timingWords says the events of a timing (those applied together) in a script's words,
// without their time.
func timingWords(tm *oracle.Timing) string {
	events := tm.Group
	if len(events) == 0 {
		events = []oracle.Event{tm.Event}
	}
	var words []string
	for _, e := range events {
		_, rest, _ := strings.Cut(e.String(), " ")
		words = append(words, rest)
	}
	return strings.Join(words, ", ")
}
