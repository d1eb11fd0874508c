package status

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteNetwork writes the network view: the locations with whom each hears, then one row a
// check with a column per location, and each disagreement's reason under its row.
func WriteNetwork(w io.Writer, v NetworkView, now time.Time) error {
	unknown := ""
	if v.Unknown > 0 {
		unknown = fmt.Sprintf(", %d unknown (a location unreachable)", v.Unknown)
	}
	fmt.Fprintf(w, "network as %s sees it: %d checks, %d where locations disagree%s, %d shown of %d matching\n",
		clean(v.Location), v.Checks, v.Disagreements, unknown, len(v.Rows), v.Matching)
	tw := newTable(w)
	row(tw, "LOCATION", "REGION", "STATUS", "HEARS (FRESH/CHECKERS BY REGION)")
	for _, l := range v.Locations {
		st := "reachable"
		switch {
		case l.Self:
			st = "asked"
		case !l.Reachable:
			st = "UNREACHABLE: " + l.Error
		}
		var hears []string
		for _, h := range l.Heard {
			hears = append(hears, fmt.Sprintf("%s %d/%d", h.Region, h.Fresh, h.Total))
		}
		row(tw, l.ID, l.Region, st, strings.Join(hears, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	head := []string{"CHECK", "AGREE"}
	for _, l := range v.Locations {
		head = append(head, strings.ToUpper(l.ID))
	}
	row(tw, head...)
	for _, r := range v.Rows {
		agree := "yes"
		switch {
		case r.Disagree || r.Agreement == AgreementDisagree:
			agree = "NO"
		case r.Agreement == AgreementUnknown:
			agree = "unknown"
		}
		cells := []string{r.ID, agree}
		for _, l := range v.Locations {
			c, ok := r.Cells[l.ID]
			switch {
			case !l.Reachable:
				cells = append(cells, "unreachable")
			case !ok:
				cells = append(cells, "-")
			default:
				s := fmt.Sprintf("%s %d/%d", c.State, c.Healthy, c.Fresh)
				if c.Held {
					s += " held"
				}
				if c.Availability24h != nil {
					s += " " + percent(*c.Availability24h) + " of " + observedFor(c.Observed24h) + " observed"
				}
				cells = append(cells, s)
			}
		}
		row(tw, cells...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range v.Rows {
		if r.Disagree || r.Agreement == AgreementUnknown {
			fmt.Fprintf(w, "%s: %s\n", clean(r.ID), clean(r.Reason))
		}
	}
	if v.Next != "" {
		fmt.Fprintf(w, "more checks follow: --cursor %s\n", clean(v.Next))
	}
	return nil
}

// WriteHistory writes one check's availability and its verdict changes, newest first.
func WriteHistory(w io.Writer, h CheckHistory, now time.Time) error {
	fmt.Fprintf(w, "check %s at %s: %s since %s (%s)\n", clean(h.Check), clean(h.Location), clean(h.State),
		h.Since.Format(time.RFC3339), age(h.Since, now))
	var av []string
	for _, a := range h.Availability {
		if a.Observed == 0 {
			av = append(av, a.Window+" -")
			continue
		}
		av = append(av, fmt.Sprintf("%s %.3f%% of %s observed", a.Window, 100*a.Ratio, observedFor(a.Observed)))
	}
	fmt.Fprintf(w, "availability (healthy share of the time observed): %s\n", strings.Join(av, ", "))
	tw := newTable(w)
	row(tw, "AT", "AGO", "FROM", "TO", "HEALTHY/FRESH", "STALE")
	for _, c := range h.Changes {
		row(tw, c.At.Format(time.RFC3339Nano), age(c.At, now), cmpOr(c.From, "none"), cmpOr(c.To, "none"),
			fmt.Sprintf("%d/%d", c.Healthy, c.Fresh), strconv.Itoa(c.Stale))
	}
	return tw.Flush()
}

// WriteAnswerHistory writes answer changes, newest first.
func WriteAnswerHistory(w io.Writer, a AnswerHistory, now time.Time) error {
	tw := newTable(w)
	row(tw, "AT", "AGO", "NAME", "TYPE", "FROM", "TO", "LAST RESORT")
	for _, c := range a.Changes {
		row(tw, c.At.Format(time.RFC3339Nano), age(c.At, now), c.Name, c.Type, strings.Join(c.From, " "),
			strings.Join(c.To, " "), yesNo(c.LastResort))
	}
	return tw.Flush()
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// percent writes a share (0 to 1) as a percentage with as many decimals as a 24-hour window
// needs to show a minute's outage (100.00% only when nothing was down).
func percent(r float64) string {
	s := strconv.FormatFloat(100*r, 'f', 2, 64)
	if s == "100.00" && r < 1 {
		s = "99.99"
	}
	return s + "%"
}

// observedFor writes the time an availability is of, short and rounded: "45s", "2m", "5h30m",
// "24h" (an unknown time, from a node of an earlier build, is "an unknown time").
func observedFor(d time.Duration) string {
	switch {
	case d <= 0:
		return "an unknown time"
	case d < time.Minute:
		return d.Round(time.Second).String()
	}
	s := strings.TrimSuffix(d.Round(time.Minute).String(), "0s") // "2m", "5h30m", "24h0m"
	if h, ok := strings.CutSuffix(s, "h0m"); ok {
		return h + "h"
	}
	return s
}
