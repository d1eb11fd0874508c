package oracle

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Report is what the oracle found in a run.
type Report struct {
	// Queries counts every query recorded; Judged those sent within the run (from Start to
	// End) at a location of the topology for a type the oracle judges (A, AAAA); Answered
	// the judged ones that got an answer (not SERVFAIL or REFUSED); LastResort the answers
	// that only last resort allowed.
	Queries, Judged, Answered, LastResort int
	// Wrong are the answers the model allowed at no instant of their flight. Target 0.
	Wrong []Finding
	// Flips are presence changes of an address that nothing explains. Target 0.
	Flips []Finding
	// Excused are the wrong answers and flips that a check starved by a stall of the harness
	// explains (a stall at least as long as its probe timeout: starved.go); not counted.
	Excused []Finding
	// Unanswered counts, by location, the judged queries without an answer.
	Unanswered map[string]Unanswered
	// Timings are the detection or recovery times, one per event that changed a settled
	// answer, measured from the answers.
	Timings []Timing
	// Unsure lists what the model could not decide, with when.
	Unsure []Unsure
	// Stalls counts the harness's stalls (Run.Stalls); Stalled is their total time, which
	// every window allowed on top of Bounds.Slack.
	Stalls  int
	Stalled time.Duration
}

// OK reports whether the run passed: no wrong answer, no flip, and every location within its
// bound of unanswered queries.
func (r *Report) OK() bool {
	if len(r.Wrong) > 0 || len(r.Flips) > 0 {
		return false
	}
	for _, u := range r.Unanswered {
		if u.Over() {
			return false
		}
	}
	return true
}

// UnansweredTotal returns the unanswered queries counted against the bound, summed over the
// locations, and those excused (the location was down or starting, or the harness stalled).
func (r *Report) UnansweredTotal() (counted, excused int) {
	for _, u := range r.Unanswered {
		counted += u.Counted
		excused += u.Excused
	}
	return counted, excused
}

// ExcusedTotal returns the excused wrong answers and flips.
func (r *Report) ExcusedTotal() (wrong, flips int) {
	for _, f := range r.Excused {
		if strings.HasPrefix(f.Reason, "FLIP ") {
			flips++
		} else {
			wrong++
		}
	}
	return wrong, flips
}

// Finding is one failure with the history around it.
type Finding struct {
	// Query is the offending query (for a flip, the one that brought the address back, or
	// removed it a second time).
	Query Query
	// Reason says what is wrong.
	Reason string
	// Allowed says what the model allowed for the record set's checks during the query.
	Allowed []string
	// Around are the queries of the same name at the same location just before and after.
	Around []Query
	// InForce are the events whose transition windows or effects were in force.
	InForce []Event
}

// Unanswered is one location's count of queries without an answer.
type Unanswered struct {
	// Judged counts the location's judged queries; Counted the unanswered ones while it was
	// up; Excused those while it was killed or starting, or the harness stalled.
	Judged, Counted, Excused int
	// Bound is the most Counted may be.
	Bound int
	// First is the first unanswered query counted, for the report.
	First *Query
}

// Over reports whether more queries went unanswered than the bound.
func (u Unanswered) Over() bool { return u.Counted > u.Bound }

// Timing is how long the answers took to follow one event.
type Timing struct {
	// Event is the event (the first of Group).
	Event Event
	// Group are the events applied within 100ms of it, judged as one change.
	Group []Event
	// Repair is set for an event that restores (heal, target up, start), clear for a fault.
	Repair bool
	// Bound is the longest transition window of the event: the model's bound.
	Bound time.Duration
	// ByLocation is, for each location whose settled answers changed, the time from the
	// event to its first answer that the new state allows and the old does not; a location
	// that gave none before the next event or the end is in Missing.
	ByLocation map[string]time.Duration
	// Missing lists the locations whose answers never showed the change.
	Missing []string
}

// Longest returns the longest time of t's locations.
func (t Timing) Longest() time.Duration {
	var d time.Duration
	for _, v := range t.ByLocation {
		d = max(d, v)
	}
	return d
}

// Unsure is something the model could not decide, and when.
type Unsure struct {
	// From and To bound the interval (To zero: to the end of the run).
	From, To time.Time
	// Why says what is unsure.
	Why string
}

// Write writes the report: the figures, then every finding with its history.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	counted, excused := r.UnansweredTotal()
	fmt.Fprintf(&b, "oracle: %d queries, %d judged, %d answered (%d in last resort); %d wrong, %d flips, %d unanswered (+%d while a location was down or the harness stalled)\n",
		r.Queries, r.Judged, r.Answered, r.LastResort, len(r.Wrong), len(r.Flips), counted, excused)
	if r.Stalls > 0 {
		fmt.Fprintf(&b, "  harness stalls: %d, %v in all (every window allowed that much more)\n", r.Stalls, r.Stalled.Round(time.Millisecond))
	}
	if len(r.Excused) > 0 {
		wrong, flips := r.ExcusedTotal()
		fmt.Fprintf(&b, "  excused: %d wrong answers and %d flips after stalls ≥ probe timeout (the check may have been served either way; not counted)\n", wrong, flips)
	}
	for _, l := range slices.Sorted(maps.Keys(r.Unanswered)) {
		u := r.Unanswered[l]
		over := ""
		if u.Over() {
			over = fmt.Sprintf(", OVER the bound; first: %v", *u.First)
		}
		fmt.Fprintf(&b, "  unanswered at %s: %d of %d (bound %d; %d excused)%s\n", l, u.Counted, u.Judged, u.Bound, u.Excused, over)
	}
	for _, t := range r.Timings {
		what := "detection"
		if t.Repair {
			what = "recovery"
		}
		var parts []string
		for _, l := range slices.Sorted(maps.Keys(t.ByLocation)) {
			parts = append(parts, fmt.Sprintf("%s %.2fs", l, t.ByLocation[l].Seconds()))
		}
		for _, l := range t.Missing {
			parts = append(parts, l+" not seen")
		}
		var events []string
		for i, e := range t.Group {
			if i == 0 {
				events = append(events, e.String())
			} else {
				events = append(events, strings.TrimPrefix(e.String(), e.At.Format("15:04:05.000")+" "))
			}
		}
		fmt.Fprintf(&b, "  %s of [%s]: %s (bound %.2fs)\n", what, strings.Join(events, "; "), strings.Join(parts, ", "), t.Bound.Seconds())
	}
	for _, u := range r.Unsure {
		to := "the end"
		if !u.To.IsZero() {
			to = u.To.Format("15:04:05.000")
		}
		fmt.Fprintf(&b, "  unsure from %s to %s: %s\n", u.From.Format("15:04:05.000"), to, u.Why)
	}
	writeFindings(&b, "WRONG", r.Wrong)
	writeFindings(&b, "FLIP", r.Flips)
	writeFindings(&b, "EXCUSED", r.Excused)
	_, err := io.WriteString(w, b.String())
	return err
}

// maxWritten bounds the findings of one kind written with their history.
const maxWritten = 10

// writeFindings writes the first findings with their history, then how many more there are.
func writeFindings(b *strings.Builder, what string, fs []Finding) {
	for i, f := range fs {
		if i == maxWritten {
			fmt.Fprintf(b, "... and %d more %s findings\n", len(fs)-maxWritten, what)
			return
		}
		writeFinding(b, what, f)
	}
}

// writeFinding writes one finding with its history.
func writeFinding(b *strings.Builder, what string, f Finding) {
	fmt.Fprintf(b, "%s %v: %s\n", what, f.Query, f.Reason)
	if len(f.Allowed) > 0 {
		fmt.Fprintf(b, "    allowed: %s\n", strings.Join(f.Allowed, "; "))
	}
	for _, e := range f.InForce {
		fmt.Fprintf(b, "    event:   %v\n", e)
	}
	for _, q := range f.Around {
		mark := "  "
		if q.Sent.Equal(f.Query.Sent) {
			mark = "=>"
		}
		fmt.Fprintf(b, "    %s %v\n", mark, q)
	}
}
