package answeraudit

import (
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/quorum"
)

// Answer is one DNS query a location answered (or did not), as the client saw it.
type Answer struct {
	// Location is the region of the location asked.
	Location string
	// Name is the fully qualified name asked, in lower case; the type is A.
	Name string
	// Sent and Received bracket the query: the location chose its answer in between.
	Sent, Received time.Time
	// Err is why no answer came (a timeout); empty when one came.
	Err string
	// Rcode is the answer's response code.
	Rcode int
	// Values are the answer's A records, sorted.
	Values []string
}

// String says the answer on one line.
func (a Answer) String() string {
	if a.Err != "" {
		return fmt.Sprintf("%s %s @%s: %s", a.Sent.Format("15:04:05.000"), a.Name, a.Location, a.Err)
	}
	return fmt.Sprintf("%s %s @%s: %s [%s] in %v", a.Sent.Format("15:04:05.000"), a.Name, a.Location,
		dns.RcodeToString[a.Rcode], strings.Join(a.Values, " "), a.Received.Sub(a.Sent).Round(time.Microsecond))
}

// Change is a verdict change at one location, as a sampler of the location's verdicts saw it.
// The location served the new verdict from some instant after After (the start of the last
// sample that still saw the old one) and at or before At (the end of the first sample that
// saw the new one).
type Change struct {
	// Location is the region of the location.
	Location string
	// Check is the check's ID.
	Check string
	// State is the new verdict's state.
	State quorum.State
	// Serving is how DNS serves the new verdict: healthy or unknown (fail open) is true.
	Serving bool
	// After is the start of the last sample that saw the previous verdict (for the first
	// verdict, the start of the sample that saw it).
	After time.Time
	// At is the end of the first sample that saw this verdict.
	At time.Time
	// Reason is the verdict's one-sentence explanation.
	Reason string
	// Undecided says the location had decided nothing of the check since it (re)started.
	Undecided bool
}

// String says the change on one line.
func (c Change) String() string {
	return fmt.Sprintf("%s %s @%s -> %s (%s)", c.At.Format("15:04:05.000"), c.Check, c.Location, c.State, c.Reason)
}

// History is what a run recorded: every answer and every verdict change, each in time order
// per location.
type History struct {
	Answers []Answer
	Changes []Change
}
