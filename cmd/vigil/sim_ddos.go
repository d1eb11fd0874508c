package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/vigil-dns/vigil/lab/sim"
)

// runSimDDoS runs `vigil sim ddos [flags]`: a query flood at one zone's virtual name servers,
// with the answers of every other zone measured by how many servers it shares with the
// victim, then the same flood with no sharding. It exits 1 when an error stopped the run or
// the figures break the claim.
func runSimDDoS(ctx context.Context, args []string, level slog.Level, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim ddos", stderr)
	var c sim.DDoSConfig
	fs.IntVar(&c.Zones, "zones", 40, "zones in the document")
	fs.IntVar(&c.Fleet, "fleet", 16, "virtual name servers of the sharded layout")
	fs.IntVar(&c.ShardSize, "shard-size", 4, "name servers per zone")
	fs.IntVar(&c.Budget, "budget", 5000, "queries a second each virtual name server answers")
	fs.IntVar(&c.FloodRate, "rate", 25000, "flood queries a second to each of the victim's name servers")
	fs.IntVar(&c.FloodSenders, "senders", 1, "flood goroutines per victim name server")
	fs.DurationVar(&c.Flood, "flood", 6*time.Second, "how long the flood lasts")
	fs.DurationVar(&c.Before, "before", 2*time.Second, "how long the zones are measured before the flood")
	fs.DurationVar(&c.ProbeInterval, "probe-interval", 100*time.Millisecond, "how often each zone is asked on each of its name servers")
	fs.DurationVar(&c.ProbeTimeout, "probe-timeout", time.Second, "how long a probe waits for its answer before it counts as unanswered")
	fs.DurationVar(&c.TryTimeout, "try-timeout", 250*time.Millisecond, "how long each zone's resolver waits for one name server before it tries the next")
	unsharded := fs.Bool("compare", true, "also run the same flood with every zone on the same name servers")
	var b sim.DDoSBounds
	fs.Float64Var(&b.MinAnswered, "min-answered", 0.99, "the claim: the least share of queries answered on the servers the victim does not have")
	fs.DurationVar(&b.MaxP99, "max-p99", 50*time.Millisecond, "the claim: their answers' 99th percentile latency during the flood")
	fs.Float64Var(&b.MaxUnshardedAnswered, "max-unsharded-answered", 0.85, "the most share of the other zones' queries the unsharded run may answer (more: the flood did not reach them)")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	c.Unsharded = *unsharded
	dir, err := os.MkdirTemp("", "vigil-sim-ddos-")
	if err != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	c.DataDir, c.Timeline = dir, stdout
	c.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	fmt.Fprintln(stdout, "vigil sim: scenario ddos on one agent runtime (control and location roles), DNS on loopback")
	res, err := sim.RunDDoS(ctx, c)
	if werr := res.WriteReport(stdout); werr != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", werr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nclaim: every zone but the victim answers at least %.0f%% of queries on its servers the victim does not have, p99 within %v, while the victim's servers shed\n",
		100*b.MinAnswered, b.MaxP99)
	if problems := res.Problems(b); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stdout, "  %s\n", p)
		}
		fmt.Fprintln(stdout, "\nFAIL")
		return 1
	}
	fmt.Fprintln(stdout, "\nPASS")
	return 0
}
