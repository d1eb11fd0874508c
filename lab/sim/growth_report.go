package sim

// The fleet-growth report, and the bounds of flat per-node resources it is checked against.

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// Tolerances of flat per-node resources, from the first measure to the last.
const (
	// flatGoroutines: a role's goroutines per node may grow by 10% plus 2 (push/pulls and
	// probes in flight at the instant of the measure).
	flatGoroutinesRatio, flatGoroutinesPlus = 1.10, 2.0
	// flatSockets: a role's sockets per node may grow by 1 (a probe in flight).
	flatSocketsPlus = 1.0
	// flatHeapRatio: the heap per node may grow by 25%: gossip keeps about 1 KiB per member
	// at every node, 9 KiB more per node for 9 more members, and the history grows. The
	// later measure's least (what its collection found kept) is held to the earlier one's
	// most (what its collection left): garbage allocated during a collection, which load
	// stretches, counts in neither comparison's favour.
	flatHeapRatio = 1.25
)

// Problems lists what the growth did not keep flat or whole: per-node goroutines, sockets and
// heap beyond the tolerances, and a location that counted fewer fresh reports of a check than
// its shards promise while the assignment rebalanced, other than within a freshness window
// after a measured stall of the harness.
func (g *Growth) Problems() []string {
	if g == nil {
		return nil
	}
	var out []string
	for i, rb := range g.Rebalances {
		if short := rb.ShortLooks - rb.ShortStalled; rb.FreshDuring[0] < rb.Want && short > 0 {
			out = append(out, fmt.Sprintf("grow %d: a location counted as few as %d fresh reports of a check while the shards moved, in %d looks with no stall of the harness in the freshness window before them (%d more after one); the shards promise %d",
				i+1, rb.FreshDuring[0], short, rb.ShortStalled, rb.Want))
		}
	}
	if len(g.Measures) < 2 {
		return out
	}
	a, b := g.Measures[0], g.Measures[len(g.Measures)-1]
	for _, role := range []string{"location", "checker"} {
		x, y := a.Role(role), b.Role(role)
		if y.MeanGoroutines > x.MeanGoroutines*flatGoroutinesRatio+flatGoroutinesPlus {
			out = append(out, fmt.Sprintf("goroutines per %s: %.1f, then %.1f", role, x.MeanGoroutines, y.MeanGoroutines))
		}
		if y.MeanSockets > x.MeanSockets+flatSocketsPlus {
			out = append(out, fmt.Sprintf("sockets per %s: %.1f, then %.1f", role, x.MeanSockets, y.MeanSockets))
		}
	}
	if b.HeapPerNode() > a.HeapHighPerNode()*flatHeapRatio {
		out = append(out, fmt.Sprintf("heap per node: %s to %s, then at least %s", kib(a.HeapPerNode()), kib(a.HeapHighPerNode()), kib(b.HeapPerNode())))
	}
	return out
}

// write adds the growth's figures to a report.
func (g *Growth) write(b *strings.Builder) {
	if g == nil {
		return
	}
	fmt.Fprintf(b, "\nfleet growth\n")
	for i, rb := range g.Rebalances {
		fmt.Fprintf(b, "  grow %d: %d checkers joined at once; %d shards moved\n", i+1, len(rb.Added), rb.Moved)
		fmt.Fprintf(b, "    every planned checker counted   %v after the growth\n", rb.Covered.Round(10*time.Millisecond))
		fmt.Fprintf(b, "    rebalanced                      %v after the growth (exact and stable for %v)\n", rb.Took.Round(10*time.Millisecond), rebalanceStable)
		fmt.Fprintf(b, "    harness stalled meanwhile       %v until counted, %v until rebalanced\n", rb.StalledCovering.Round(10*time.Millisecond), rb.Stalled.Round(10*time.Millisecond))
		fmt.Fprintf(b, "    fresh reports per check         %d to %d before, %d to %d while rebalancing; shards promise %d\n",
			rb.FreshBefore[0], rb.FreshBefore[1], rb.FreshDuring[0], rb.FreshDuring[1], rb.Want)
		fmt.Fprintf(b, "    looks short of the promise      %d, %d of them within a freshness window after a stall\n", rb.ShortLooks, rb.ShortStalled)
	}
	if len(g.Measures) > 0 {
		tw := tabwriter.NewWriter(b, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  measure\tnodes\tgoroutines per location (min-max)\tper checker (min-max)\tsockets per location\tper checker\tother goroutines\theap per node (kept to left)\tcollection: heap left, allocated during it, wall time")
		for _, m := range g.Measures {
			l, c, hs := m.Role("location"), m.Role("checker"), m.HeapSample
			fmt.Fprintf(tw, "  %s\t%d\t%.1f (%d-%d)\t%.1f (%d-%d)\t%.1f\t%.1f\t%d\t%s\t%s, %s, %v\n", m.Label, len(m.Nodes),
				l.MeanGoroutines, l.MinGoroutines, l.MaxGoroutines, c.MeanGoroutines, c.MinGoroutines, c.MaxGoroutines,
				l.MeanSockets, c.MeanSockets, m.Unlabeled, kib(m.HeapPerNode())+" to "+kib(m.HeapHighPerNode()), mib(hs.After), mib(hs.During), hs.Took.Round(time.Millisecond))
		}
		tw.Flush()
		if len(g.Measures) > 1 {
			a, z := g.Measures[0], g.Measures[len(g.Measures)-1]
			if added := len(z.Nodes) - len(a.Nodes); added > 0 && z.Heap > a.Heap {
				fmt.Fprintf(b, "  heap added per added node: %s (the new node's own, and every node's state of one more member)\n", kib(float64(z.Heap-a.Heap)/float64(added)))
			}
		}
	}
	if p := g.Problems(); len(p) > 0 {
		for _, x := range p {
			fmt.Fprintf(b, "  NOT FLAT %s\n", x)
		}
	} else {
		fmt.Fprintf(b, "  flat: per-node goroutines within +10%%+2, sockets within +1, heap within +25%%; no location counted fewer reports than the shards promise\n")
	}
}

// kib formats a number of bytes in KiB.
func kib(b float64) string { return fmt.Sprintf("%.0f KiB", b/1024) }

// mib formats a number of bytes in MiB.
func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
