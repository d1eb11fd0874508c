package verify

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-dns/vigil/status"
)

// WriteReport writes a report as `vigil status verification` prints it: the share of
// disagreeing answers, each location's outcomes and last ask, the measured failovers and the
// pending ones, with ages counted to now.
func WriteReport(w io.Writer, r Report, now time.Time) error {
	fmt.Fprintf(w, "answer verification, one record set every %s: %d answers judged, %d disagreed (%.2f%%)",
		status.Clean(r.Interval), r.Answers, r.Disagreed, 100*r.DisagreementShare)
	if len(r.Unanswering) > 0 {
		fmt.Fprintf(w, "; not answering: %s", status.Clean(strings.Join(r.Unanswering, ", ")))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	outcomes := []string{OutcomeAgree, OutcomeDisagree, OutcomeUnconfirmed, OutcomeNoAnswer, OutcomeNoVerdicts}
	head := []string{"LOCATION"}
	for _, o := range outcomes {
		head = append(head, strings.ToUpper(strings.ReplaceAll(o, "_", " ")))
	}
	status.Row(tw, append(head, "LAST", "RECORD SET", "AGO", "SERVER", "WHY")...)
	for _, l := range r.Locations {
		cells := []string{l.ID}
		for _, o := range outcomes {
			cells = append(cells, strconv.FormatInt(l.Outcomes[o], 10))
		}
		status.Row(tw, append(cells, l.Outcome, l.RecordSet, status.Ago(l.At, now), l.Server, l.Reason)...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmeasured failovers (first verdict change to every location answering accordingly), newest first; %d dropped unmeasured\n", r.Dropped)
	status.Row(tw, "RECORD SET", "STARTED", "AGO", "SECONDS", "SEEN AFTER", "LOCATIONS CHANGED")
	for _, c := range r.Convergences {
		status.Row(tw, c.RecordSet, c.Started.Format(time.RFC3339Nano), status.Ago(c.Started, now), strconv.FormatFloat(c.Seconds, 'f', 2, 64),
			strconv.FormatFloat(c.SeenSeconds, 'f', 2, 64), strconv.Itoa(c.Changed))
	}
	for _, p := range r.Pending {
		what := "all answer accordingly, settling"
		if len(p.Waiting) > 0 {
			what = "waiting for " + strings.Join(p.Waiting, ", ")
		}
		status.Row(tw, p.RecordSet, p.Started.Format(time.RFC3339Nano), status.Ago(p.Started, now), "pending", "-", what)
	}
	return tw.Flush()
}
