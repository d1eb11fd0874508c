package sim

// The poison figures in a run's report.

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-dns/vigil/checker"
)

// write adds the figures to a report.
func (f *PoisonFigures) write(b *strings.Builder) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(b, "\npoison network %s: %d checkers per region (pools: %d workers for checkers 1-%d, %d for %d-%d), every check on %d of them per region, probes every %v\n",
		f.Network, f.CheckersPerRegion, checker.DefaultConcurrency, f.CheckersPerRegion/2, smallPool, f.CheckersPerRegion/2+1, f.CheckersPerRegion, f.ShardSize, f.Interval)
	fmt.Fprintf(b, "  ordinary probes' schedule (lag: due to start; gap: between consecutive probes of one check at one checker; missed: gaps over 1.5 intervals)\n")
	tw := tabwriter.NewWriter(b, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  window\tpool\thostile checks held\tcheckers\tprobes\tfailed\tlag p50\tlag p99\tlag max\tgap max\tmissed")
	row := func(window, pool, held string, s ScheduleFigures) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d of %d\n", window, pool, held, s.Checkers, s.Probes,
			s.Failed, ms(s.LagP50), ms(s.LagP99), ms(s.LagMax), ms(s.GapMax), s.Missed, s.Gaps)
	}
	row("before poison", "all", "-", f.Baseline)
	for _, s := range f.Groups {
		row(fmt.Sprintf("poisoned %.1fs", f.Poisoned.Seconds()), strconv.Itoa(s.Pool), fmt.Sprintf("%d hang, %d flood", s.Hangs, s.Floods), s)
	}
	for _, s := range f.Classes {
		held := "no hang"
		if s.Hangs > 0 {
			held = "a hang or two"
		}
		row("  (together)", strconv.Itoa(s.Pool), held, s)
	}
	tw.Flush()
	fmt.Fprintf(b, "  hostile checks while poisoned (the flood endpoint wrote %.1f MB; the hostile endpoints accepted %d connections)\n",
		float64(f.FloodBytes)/1e6, f.Accepted)
	tw = tabwriter.NewWriter(b, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  check\tkind\tcheckers\tprobes\treasons\tprobe p99\tlongest\ttimeout\tunhealthy everywhere after\tbound")
	for _, h := range f.Hostile {
		det := "never"
		if h.Detected {
			det = fmt.Sprintf("%.2fs", h.Detection.Seconds())
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.2fs\n", h.Check, h.Kind, h.Checkers, h.Probes, h.Reasons,
			ms(h.P99), ms(h.Longest), ms(h.Timeout), det, h.Bound.Seconds())
	}
	tw.Flush()
	if f.Dropped > 0 {
		fmt.Fprintf(b, "  %d probe results not kept (bound %d reached)\n", f.Dropped, maxProbeRecords)
	}
}
