package status

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// The tables of `vigil status`. Each writes one view of the API to w, with ages counted to now.

// newTable returns a tabwriter for a table.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// row writes one tab-separated row, every cell cleaned of control characters.
func row(tw io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = clean(c)
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
}

// clean replaces control characters (a target's message could hold any) and tabs, so that a
// cell cannot break the table or the terminal; an empty cell becomes "-".
func clean(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

// age writes how long before now t was, e.g. "12s ago"; "never" for the zero time.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + (-d).Round(time.Second).String()
	}
	return d.Round(time.Second).String() + " ago"
}

// WriteVerdicts writes a location's verdicts, one check a row, with a column per region. STATE
// is the state DNS acts on: a check an override forces shows the forced state, marked
// "(forced)", and an OVERRIDE column (when any check is forced) gives the override's kind,
// author and expiry and the verdict underneath; the header counts forced checks apart.
func WriteVerdicts(w io.Writer, l VerdictList, now time.Time) error {
	t := l.Tally
	fmt.Fprintf(w, "location %s (%s), %d checks: %d healthy, %d unhealthy, %d unknown", clean(l.Location), clean(l.Region),
		len(l.Checks), t.Healthy, t.Unhealthy, t.Unknown)
	if forced := t.ForcedHealthy + t.ForcedUnhealthy; forced > 0 {
		fmt.Fprintf(w, "; %d forced by an override (%d unhealthy, %d healthy)", forced, t.ForcedUnhealthy, t.ForcedHealthy)
	}
	fmt.Fprintln(w)
	anyForced := false
	for _, c := range l.Checks {
		anyForced = anyForced || c.Override != nil
	}
	tw := newTable(w)
	head := []string{"CHECK", "STATE", "SINCE", "HEALTHY/FRESH", "STALE", "RULE"}
	if anyForced {
		head = append(head, "OVERRIDE")
	}
	for _, r := range l.Regions {
		head = append(head, strings.ToUpper(r))
	}
	row(tw, head...)
	for _, c := range l.Checks {
		state := c.State.String()
		if c.Override != nil {
			state = c.ServedState.String() + " (forced)"
		}
		if c.Held {
			state += " (held)"
		}
		cells := []string{c.ID, state, age(c.Since, now),
			fmt.Sprintf("%d/%d", c.Counts.Healthy, c.Counts.Fresh), strconv.Itoa(c.Counts.Stale), c.Rule.String()}
		if c.Calculated {
			cells[3] = fmt.Sprintf("%d/%d children", c.Counts.Healthy, c.Counts.Healthy+c.Counts.Unhealthy)
		}
		if anyForced {
			cells = append(cells, overrideCell(c, now))
		}
		for _, r := range l.Regions {
			cell, ok := c.Regions[r]
			if !ok {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, cellText(cell))
		}
		row(tw, cells...)
	}
	return tw.Flush()
}

// overrideCell says who forces a check, until when, and the verdict underneath; "-" for a
// check no override forces.
func overrideCell(c VerdictSummary, now time.Time) string {
	o := c.Override
	if o == nil {
		return "-"
	}
	return fmt.Sprintf("%s by %s until %s (%s), verdict %s", o.Kind, o.Author,
		o.Expires.UTC().Format("2006-01-02 15:04Z"), age(o.Expires, now), c.State)
}

// WriteCheck writes one check's verdict with its evidence.
func WriteCheck(w io.Writer, e CheckEvidence, now time.Time) error {
	state := e.State.String()
	if e.Override != nil {
		state = fmt.Sprintf("%s (forced by %s until %s; verdict %s)", e.ServedState, clean(e.Override.Author),
			e.Override.Expires.UTC().Format("2006-01-02 15:04Z"), e.State)
	}
	if e.Held {
		state += " (held)"
	}
	fmt.Fprintf(w, "check %s: %s since %s (%s)\n", clean(e.ID), state, e.Since.Format(time.RFC3339), age(e.Since, now))
	fmt.Fprintf(w, "  %s\n", clean(e.Explanation))
	served := "yes"
	if !e.ServedAsHealthy {
		served = "no (records withheld)"
	}
	fmt.Fprintf(w, "  served as healthy: %s; rule: %s", served, e.Rule)
	if !e.Calculated {
		fmt.Fprintf(w, "; threshold: more than %g%% of at least %d fresh; freshness window %s; hold %s",
			e.HealthyThreshold*100, e.MinReporters, e.FreshnessWindow.Std(), e.Hold.Std())
	}
	if e.Inverted {
		fmt.Fprint(w, "; inverted")
	}
	if e.Disabled {
		fmt.Fprint(w, "; disabled")
	}
	fmt.Fprintln(w)
	if len(e.Children) > 0 {
		tw := newTable(w)
		row(tw, "CHILD", "STATE", "COUNTED")
		for _, c := range e.Children {
			counted := "unhealthy"
			if c.CountedHealthy {
				counted = "healthy"
			}
			row(tw, c.Check, c.State.String(), counted)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(e.Votes)+len(e.NeverHeard) == 0 {
		return nil
	}
	tw := newTable(w)
	row(tw, "CHECKER", "REGION", "VOTE", "REASON", "LATENCY", "LAST HEARD", "WHY")
	for _, v := range e.Votes {
		row(tw, v.Checker, v.Region, v.Status.String(), v.Reason, v.Latency.Std().String(), age(v.LastProgress, now), v.Why)
	}
	for _, a := range e.NeverHeard {
		row(tw, a.Checker, a.Region, "never heard", "", "", "never", a.Why)
	}
	return tw.Flush()
}

// WriteCheckers writes the checkers as a location hears them.
func WriteCheckers(w io.Writer, l CheckerList, now time.Time) error {
	tw := newTable(w)
	row(tw, "CHECKER", "REGION", "HEARD", "LAST PROGRESS", "STALE SINCE", "REPORTS")
	for _, h := range l.Checkers {
		heard := "stale"
		if h.Fresh {
			heard = "fresh"
		}
		stale := ""
		if !h.StaleSince.IsZero() {
			stale = age(h.StaleSince, now)
		}
		row(tw, h.ID, h.Region, heard, age(h.LastProgress, now), stale, strconv.Itoa(h.Reports))
	}
	return tw.Flush()
}

// WriteAnswer writes what a location would answer for a name and type.
func WriteAnswer(w io.Writer, a Answer) error {
	fmt.Fprintf(w, "%s %s: %s policy, rule %s", clean(a.Name), clean(a.Type), clean(a.Policy), clean(a.Rule))
	if a.LastResort {
		fmt.Fprint(w, ", LAST RESORT (no record healthy: all treated as healthy)")
	}
	fmt.Fprintf(w, "\nanswer: %s\n", clean(strings.Join(a.Values, " ")))
	if a.Region != "" {
		fmt.Fprintf(w, "region %s: %s\n", clean(a.Region), clean(a.RegionReason))
	}
	tw := newTable(w)
	row(tw, "#", "VALUE", "CHECK", "HEALTH", "ROLE/WEIGHT", "ELIGIBLE", "CHOSEN")
	for _, c := range a.Candidates {
		rw := string(c.Role)
		if c.Weight > 0 || a.Policy == "weighted" {
			rw = strconv.Itoa(c.Weight)
		}
		if c.Region != "" {
			rw = c.Region
		}
		row(tw, strconv.Itoa(c.Index), c.Value, c.HealthCheck, c.Health.String(), rw, yesNo(c.Eligible), yesNo(c.Chosen))
	}
	return tw.Flush()
}

// WriteProbes writes a checker's assigned checks with their latest results.
func WriteProbes(w io.Writer, l ProbeList, now time.Time) error {
	self := "healthy"
	if !l.Self.Healthy {
		self = "ISOLATED: " + l.Self.Reason
	}
	fmt.Fprintf(w, "checker %s (%s), self-health: %s, %d checks\n", clean(l.Checker), clean(l.Region), clean(self), len(l.Probes))
	tw := newTable(w)
	row(tw, "CHECK", "TARGET", "STATUS", "RUN", "LAST", "REASON", "TOTAL", "CONNECT", "TLS", "FIRST BYTE", "PROBED")
	for _, p := range l.Probes {
		target := p.Target
		switch {
		case p.Protocol != "" && target != "":
			target = p.Protocol + "://" + target
		case target == "" && p.Last != nil:
			target = p.Last.Address
		}
		cells := []string{p.Check, target, p.Status, strconv.Itoa(p.Consecutive)}
		if p.Last == nil {
			cells = append(cells, "-", "not probed yet", "", "", "", "", "never")
		} else {
			r := p.Last
			outcome := "ok"
			if !r.Healthy {
				outcome = "fail"
			}
			reason := r.Reason
			if r.Message != "" {
				reason += ": " + r.Message
			}
			cells = append(cells, outcome, reason, r.Timings.Total.Std().String(), r.Timings.Connect.Std().String(),
				r.Timings.TLS.Std().String(), r.Timings.FirstByte.Std().String(), age(r.At, now))
		}
		row(tw, cells...)
	}
	return tw.Flush()
}

// WriteMembers writes the node's configuration and version, then the pool as it sees it.
func WriteMembers(w io.Writer, n NodeInfo, l MemberList) error {
	ready := "ready"
	if !n.Readiness.Ready {
		ready = "NOT READY"
		if len(n.Readiness.Reasons) > 0 {
			ready += ": " + strings.Join(n.Readiness.Reasons, "; ")
		}
	}
	fmt.Fprintf(w, "node %s (%s), roles %s, version %s, %s\n", clean(n.ID), clean(n.Region),
		clean(strings.Join(n.Roles, ",")), clean(n.Version), clean(ready))
	// The message says in words what the index and the source say (and why, on a disk copy):
	// when there is one, it stands alone.
	if n.Config.Message != "" {
		fmt.Fprintf(w, "configuration: %s\n", clean(n.Config.Message))
	} else {
		fmt.Fprintf(w, "configuration index %d from %s\n", n.Config.Index, clean(string(n.Config.Source)))
	}
	if c := n.Config; c.LastError != "" {
		// While a voter fails, which one, since when and the error it gave.
		at := ""
		if !c.LastErrorAt.IsZero() {
			at = " at " + c.LastErrorAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "last error reading the control plane%s: %s\n", at, clean(c.LastError))
	}
	tw := newTable(w)
	row(tw, "MEMBER", "REGION", "ROLES", "ADDRESS", "STATE")
	for _, m := range l.Members {
		row(tw, m.ID, m.Region, strings.Join(m.Roles, ","), m.Addr, m.State)
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// cellText writes a region's cell: "healthy 2/3" (healthy of fresh), "stale (2)", "unknown".
func cellText(c RegionCell) string {
	switch fresh := c.Healthy + c.Unhealthy; {
	case fresh > 0:
		return fmt.Sprintf("%s %d/%d", c.State, c.Healthy, fresh)
	case c.Stale > 0:
		return fmt.Sprintf("%s (%d)", c.State, c.Stale)
	}
	return c.State
}

// Row writes one tab-separated table row, every cell cleaned as Clean does: for other
// packages' tables of the same look (verify's report).
func Row(w io.Writer, cells ...string) { row(w, cells...) }

// Clean returns s with control characters replaced, "-" for an empty string: a cell or a
// value from the network made safe for a terminal.
func Clean(s string) string { return clean(s) }

// Ago says how long before now t was ("12s ago", "in 3s", "never" for the zero time).
func Ago(t, now time.Time) string { return age(t, now) }
