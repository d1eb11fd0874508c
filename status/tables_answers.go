package status

import (
	"fmt"
	"io"
	"strings"
)

// WriteAnswers writes the DNS view: for each record set that consults a health check, what the
// location answers now, its policy, the rule that chose the answer, whether last resort is in
// force (no record healthy, so every record answered) and each record's health. The header
// counts the sets, those matching a search and those in last resort.
func WriteAnswers(w io.Writer, l AnswerList) error {
	fmt.Fprintf(w, "location %s: %d record sets consult a health check", clean(l.Location), l.Sets)
	if l.Matching < l.Sets {
		fmt.Fprintf(w, ", %d match", l.Matching)
	}
	fmt.Fprintf(w, "; %d in last resort", l.LastResort)
	if len(l.Answers) < l.Matching {
		fmt.Fprintf(w, "; the first %d listed (-limit)", len(l.Answers))
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	row(tw, "RECORD SET", "ANSWER", "POLICY", "RULE", "LAST RESORT", "RECORDS")
	for _, a := range l.Answers {
		set := a.Name + " " + a.Type
		if a.Error != "" {
			row(tw, set, "no answer: "+a.Error, "", "", "", "")
			continue
		}
		rule := a.Rule
		if a.Region != "" {
			rule += " (" + a.Region + ")"
		}
		last := "no"
		if a.LastResort {
			last = "yes"
		}
		recs := make([]string, 0, len(a.Candidates))
		for _, c := range a.Candidates {
			r := c.Value
			if c.HealthCheck != "" {
				r += " " + c.HealthCheck
			}
			recs = append(recs, r+" "+c.Health.String())
		}
		answer := strings.Join(a.Values, " ")
		if answer == "" {
			answer = "(none)"
		}
		row(tw, set, answer, a.Policy, rule, last, strings.Join(recs, "; "))
	}
	return tw.Flush()
}
