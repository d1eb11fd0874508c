package sim

import (
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/oracle"
	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
)

// turnSlack is what a verdict's change takes beyond its probes: the locations' evaluation
// tick (500ms) and a report's spread through gossip (1s), as the oracle's default bounds.
const turnSlack = 1500 * time.Millisecond

// starvedFlips splits flips, the verdict changes of healthy endpoints, into those no stall of
// the harness explains and those it does. A stall of the whole process at least as long as a
// check's probe timeout, within the time its verdict takes to turn before the change
// (failure_threshold intervals, a timeout and turnSlack), failed the check's probes at every
// checker at once: the machine did, not the target. Such a change to a verdict not served,
// and the pair's changes back to a served one after it, are starved; any other is a flip. A
// calculated check is starved when one of its children is.
func starvedFlips(flips []answeraudit.Change, stalls []oracle.Stall, doc *config.Document) (unexplained, starved []answeraudit.Change) {
	checks := checksByID(doc)
	pair := map[[2]string]bool{}
	for _, c := range flips {
		k := [2]string{c.Location, c.Check}
		switch {
		case !c.Serving && starvedBefore(checks, c.Check, c.At, stalls):
			pair[k] = true
			starved = append(starved, c)
		case c.Serving && pair[k]:
			starved = append(starved, c)
		default:
			unexplained = append(unexplained, c)
		}
	}
	return unexplained, starved
}

// starvedBefore reports whether a stall at least as long as check id's probe timeout lasted
// at some instant of the time its verdict takes to turn before at.
func starvedBefore(checks map[string]*config.Check, id string, at time.Time, stalls []oracle.Stall) bool {
	c := checks[id]
	if c == nil {
		return false
	}
	if len(c.Children) > 0 {
		for _, ch := range c.Children {
			if starvedBefore(checks, ch, at, stalls) {
				return true
			}
		}
		return false
	}
	interval, timeout, failures := oracle.ProbeTiming(c)
	from := at.Add(-(time.Duration(failures)*interval + timeout + turnSlack))
	for _, st := range stalls {
		if st.To.Sub(st.From) >= timeout && st.From.Before(at) && st.To.After(from) {
			return true
		}
	}
	return false
}

// checksByID returns doc's checks by ID.
func checksByID(doc *config.Document) map[string]*config.Check {
	checks := map[string]*config.Check{}
	for i := range doc.Checks {
		checks[doc.Checks[i].ID] = &doc.Checks[i]
	}
	return checks
}
