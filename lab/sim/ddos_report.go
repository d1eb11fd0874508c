package sim

// The ddos scenario's report (WriteReport) and the bounds a run is checked against (Problems).

import (
	"fmt"
	"io"
	"runtime"
	"time"
)

// WriteReport writes the figures of every run as tables.
func (r DDoSResult) WriteReport(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "\nddos: %d zones; each virtual name server answers %d q/s; the flood sends %d q/s to each of the victim's servers for %v; probes every %v per (zone, server), %v timeout; each zone's resolver every %v, %v a try\n",
		c.Zones, c.Budget, c.FloodRate, c.Flood, c.ProbeInterval, c.ProbeTimeout, c.ProbeInterval, c.TryTimeout)
	for _, run := range []*DDoSRun{r.Sharded, r.Unsharded} {
		if run == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s\nvictim %s on %v; flood: %d queries in %v (%.0f q/s per server), %.0f dropped by the budgets, %.0f of the victim's queries answered\n",
			run.Layout, run.Victim, run.VictimServers, run.FloodSent, run.FloodTook.Round(time.Millisecond),
			float64(run.FloodSent)/max(run.FloodTook.Seconds(), 1e-3)/float64(max(len(run.VictimServers), 1)), run.BudgetDrops, run.VictimAnswered)
		if run.CPU > 0 {
			fmt.Fprintf(w, "CPU of the whole process (flood senders, location, probes) during the flood: %.2fs in %.2fs, %.2f cores busy of %d\n",
				run.CPU.Seconds(), run.FloodTook.Seconds(), run.CPU.Seconds()/max(run.FloodTook.Seconds(), 1e-3), runtime.NumCPU())
		}
		if run.Load != "" {
			fmt.Fprintf(w, "machine load average when the flood started: %s\n", run.Load)
		}
		fmt.Fprintf(w, "%-30s %5s %7s %-7s %7s %9s %9s %9s %9s\n", "group", "zones", "servers", "phase", "probes", "answered", "p50", "p99", "max")
		for i := range run.Groups {
			g := &run.Groups[i]
			fmt.Fprintf(w, "%-30s %5d %7d %-7s %7d %8.1f%% %9s %9s %9s\n", g.Name(), g.Zones, g.Servers, g.Phase, g.Sent,
				100*g.AnsweredShare(), fmtMs(g.P50), fmtMs(g.P99), fmtMs(g.Max))
		}
	}
	return nil
}

// fmtMs formats a latency in milliseconds.
func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// DDoSBounds is the claim a ddos run is checked against.
type DDoSBounds struct {
	// MinAnswered is the least share (0 to 1) of probes answered, during the flood, on the
	// servers of every zone that the victim does not have; and before the flood, everywhere.
	MinAnswered float64
	// MaxP99 bounds the 99th percentile of their answers' latency during the flood.
	MaxP99 time.Duration
	// MaxUnshardedAnswered is the most share of the other zones' probes the unsharded run may
	// answer during the flood: more means the flood did not reach them, and the comparison
	// shows nothing.
	MaxUnshardedAnswered float64
}

// Problems checks the result against b and returns what does not hold, or nothing. Every zone
// but the victim must also resolve (MinAnswered) within MaxP99 plus one TryTimeout per server
// it shares with the victim. Beyond b:
// the flood was sent (at least half its queries), the victim's servers dropped queries for
// their budgets and answered at most their budgets (so less than half the flood), shed some of
// the probes, some zones share 1 and 2 servers with the victim, and none shares more than 2.
func (r DDoSResult) Problems(b DDoSBounds) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	c := r.Config
	shed := func(name string, run *DDoSRun) {
		servers := float64(len(run.VictimServers))
		if want := int64(float64(c.FloodRate) * servers * c.Flood.Seconds() / 2); run.FloodSent < want {
			bad("%s: the flood sent only %d queries (want at least %d): this process got too little CPU", name, run.FloodSent, want)
		}
		// On a busy machine the kernel drops some of the flood too, when the location waits
		// for a core and its sockets' buffers fill: the budgets need not drop all the excess.
		if run.BudgetDrops == 0 || run.VictimAnswered > float64(run.FloodSent)/2 {
			bad("%s: %.0f of %d flood queries dropped by the budgets, %.0f of the victim's queries answered", name, run.BudgetDrops, run.FloodSent, run.VictimAnswered)
		}
		if most := servers * float64(c.Budget) * (run.FloodTook.Seconds() + c.ProbeTimeout.Seconds() + 0.1) * 1.1; run.VictimAnswered > most {
			bad("%s: the victim's servers answered %.0f queries, over their budgets' %.0f", name, run.VictimAnswered, most)
		}
		sent, answered := 0, 0
		for i := range run.Groups {
			if g := &run.Groups[i]; g.Phase == PhaseFlood && g.Shared {
				sent += g.Sent
				answered += g.Answered
			}
		}
		if sent == 0 || float64(answered) > 0.85*float64(sent) {
			bad("%s: the victim's servers answered %d of %d probes during the flood: they did not shed", name, answered, sent)
		}
	}
	if run := r.Sharded; run == nil {
		bad("no sharded run")
	} else {
		shed("sharded", run)
		overlaps := map[int]bool{}
		for i := range run.Groups {
			g := &run.Groups[i]
			if !g.Victim && g.Overlap > 2 && g.Phase == PhaseBefore && !g.Resolver && !g.Shared {
				bad("sharded: %d zones share %d servers with the victim, over the allocator's limit of 2", g.Zones, g.Overlap)
			}
			if g.Phase == PhaseBefore && g.AnsweredShare() < b.MinAnswered {
				bad("sharded, before the flood: %s answered %.1f%% of %d", g.Name(), 100*g.AnsweredShare(), g.Sent)
			}
			if g.Phase != PhaseFlood || g.Victim || g.Shared {
				continue
			}
			if g.Resolver {
				// A resolver may try each shared server once before an unshared one answers.
				most := time.Duration(g.Overlap)*c.TryTimeout + b.MaxP99
				if g.AnsweredShare() < b.MinAnswered || g.P99 > most {
					bad("sharded, flood: %s resolved %.1f%% of %d, p99 %v: want at least %.0f%%, p99 within %v",
						g.Name(), 100*g.AnsweredShare(), g.Sent, g.P99.Round(time.Microsecond), 100*b.MinAnswered, most)
				}
				continue
			}
			overlaps[g.Overlap] = true
			if g.Sent < g.Servers*int(c.Flood/c.ProbeInterval)/3 {
				bad("sharded, flood: %s: only %d probes over %d servers", g.Name(), g.Sent, g.Servers)
			}
			if g.AnsweredShare() < b.MinAnswered || g.P99 > b.MaxP99 {
				bad("sharded, flood: %s answered %.1f%% of %d, p99 %v: want at least %.0f%%, p99 within %v",
					g.Name(), 100*g.AnsweredShare(), g.Sent, g.P99.Round(time.Microsecond), 100*b.MinAnswered, b.MaxP99)
			}
		}
		if !overlaps[1] || !overlaps[2] {
			bad("sharded: no zone shares 1 or 2 servers with the victim: the run shows nothing")
		}
	}
	if run := r.Unsharded; run != nil {
		shed("unsharded", run)
		g := run.Group(false, c.ShardSize, true, false, PhaseFlood)
		switch {
		case g == nil || g.Sent < 100:
			bad("unsharded: too few probes of the other zones during the flood")
		case g.AnsweredShare() > b.MaxUnshardedAnswered:
			bad("unsharded, flood: the other zones answered %.1f%% of %d: the flood did not reach them", 100*g.AnsweredShare(), g.Sent)
		}
	}
	return out
}
