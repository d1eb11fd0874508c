package sim

// A scripted run's report (WriteReport) and whether it passed.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// maxViolationsShown bounds the violations a report prints in full.
const maxViolationsShown = 20

// Passed reports whether the run found no violation, flipped no healthy endpoint, lost no
// acknowledged control-plane write, and (with grow and measure steps) kept per-node
// resources flat; and whether the independent oracle found no wrong answer, no flip and no
// location with more unanswered queries than its bound.
func (r Result) Passed() bool {
	return len(r.Audit.Violations) == 0 && len(r.Flips) == 0 && r.Writes.OK() && len(r.Growth.Problems()) == 0 &&
		r.OracleErr == "" && (r.Oracle == nil || r.Oracle.OK())
}

// WriteReport writes the verdict table of every location and the run's figures to w.
func (r Result) WriteReport(w io.Writer) error {
	var b strings.Builder
	for _, l := range r.Regions {
		fmt.Fprintf(&b, "\nlocation %s\n", l)
		tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  check\tverdicts seen since the network started\tchanges\tfinal\tfresh reports until the last repair\tmost unhealthy\tafter")
		for _, id := range sortedKeys(r.Final[l]) {
			var seen []string
			for _, c := range r.History.Changes {
				if c.Location == l && c.Check == id {
					seen = append(seen, c.State.String())
				}
			}
			c := r.Counted[l][id]
			a := r.AfterRepair[l][id]
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%d to %d\t%d\t%d to %d, %d unhealthy\n", id, strings.Join(seen, " > "), max(len(seen)-1, 0), r.Final[l][id], c.MinFresh, c.MaxFresh, c.MaxUnhealthy, a.MinFresh, a.MaxFresh, a.MaxUnhealthy)
		}
		tw.Flush()
	}
	v := r.Audit
	fmt.Fprintf(&b, "\nscenario %s\n", r.Scenario)
	fmt.Fprintf(&b, "  faults in force        %v\n", r.Faulted.Round(10*time.Millisecond))
	fmt.Fprintf(&b, "  queries                %d (%d answered, %d unanswered, %d not made: history full)\n", r.Queries(), v.Answers, v.Unanswered, r.Dropped)
	fmt.Fprintf(&b, "  last-resort answers    %d\n", v.LastResort)
	if r.Unmodelled {
		fmt.Fprintf(&b, "  healthy flips          not computed: the fault model cannot say what a one-way cut, loss or latency does\n")
	} else {
		fmt.Fprintf(&b, "  healthy flips          %d\n", len(r.Flips))
		if n := len(r.StarvedFlips); n > 0 {
			fmt.Fprintf(&b, "  excused flips          %d after stalls ≥ probe timeout (the harness failed the probes, not the targets; not counted)\n", n)
		}
	}
	r.writeChaos(&b)
	fmt.Fprintf(&b, "  detection              %v\n", r.Detection.Round(10*time.Millisecond))
	fmt.Fprintf(&b, "  recovery               %v\n", r.Recovery.Round(10*time.Millisecond))
	fmt.Fprintf(&b, "  violations             %d\n", len(v.Violations))
	if n := len(v.Excused); n > 0 {
		fmt.Fprintf(&b, "  excused answers        %d after stalls ≥ probe timeout (only a starved check allowed them; not violations)\n", n)
	}
	if r.Poison != nil {
		r.Poison.write(&b)
	}
	for _, f := range r.Flips {
		fmt.Fprintf(&b, "  FLIP %v\n", f)
	}
	for _, f := range r.StarvedFlips {
		fmt.Fprintf(&b, "  EXCUSED FLIP %v\n", f)
	}
	for i, x := range v.Violations {
		if i == maxViolationsShown {
			fmt.Fprintf(&b, "  ... and %d more violations\n", len(v.Violations)-i)
			break
		}
		fmt.Fprintf(&b, "  VIOLATION %v\n", x)
	}
	r.Growth.write(&b)
	switch {
	case r.OracleErr != "":
		fmt.Fprintf(&b, "\nthe independent oracle could not judge the run: %s\n", r.OracleErr)
	case r.Oracle != nil:
		b.WriteString("\nthe independent oracle (from the document, the faults and the answers alone):\n")
		_ = r.Oracle.Write(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
