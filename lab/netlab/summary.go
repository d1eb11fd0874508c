package netlab

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/lab/oracle"
)

// maxChangesShown bounds the answer changes printed per location and name.
const maxChangesShown = 40

// WriteAnswers prints, for every location and name, each change of its answers over the run
// (the first query that got a different answer than the one before), with the time since
// ready, and the queries that got no answer. It judges nothing: it is the history a reader
// (or a bug report) needs.
func WriteAnswers(w io.Writer, run *oracle.Run) error {
	type key struct{ loc, name string }
	byKey := map[key][]oracle.Query{}
	var keys []key
	for _, q := range run.Queries {
		k := key{q.Location, q.Name}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], q)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return strings.Compare(a.loc+" "+a.name, b.loc+" "+b.name)
	})
	at := func(t time.Time) string { return fmt.Sprintf("%.3fs", t.Sub(run.Start).Seconds()) }
	var b strings.Builder
	for _, k := range keys {
		qs := byKey[k]
		unanswered := 0
		var changes []string
		last := "\x00"
		for _, q := range qs {
			if q.TimedOut || q.Err != "" {
				unanswered++
				continue
			}
			ans := answerText(q)
			if ans != last {
				changes = append(changes, at(q.Sent)+" "+ans)
				last = ans
			}
		}
		fmt.Fprintf(&b, "%s %s: %d queries, %d unanswered, %d answer changes\n", k.loc, k.name, len(qs), unanswered, max(len(changes)-1, 0))
		if len(changes) > maxChangesShown {
			// A weighted name changes with every answer: its changes say nothing.
			fmt.Fprintf(&b, "    (too many to show: %s ...)\n", strings.Join(changes[:3], ", "))
			continue
		}
		for _, c := range changes {
			fmt.Fprintf(&b, "    %s\n", c)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// answerText writes a query's answer in one word: its values, sorted, or its rcode.
func answerText(q oracle.Query) string {
	if q.Rcode != 0 {
		return fmt.Sprintf("rcode %d", q.Rcode)
	}
	return "[" + strings.Join(q.Values, " ") + "]"
}
