package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/lab/dev"
	"github.com/vigil-dns/vigil/lab/sim"
)

// simScenarioList names the scenarios of vigil sim, for its help.
func simScenarioList() string {
	return strings.Join(append(sim.Scenarios(), "chaos", sim.DDoSName), ", ")
}

// runSim runs a scenario on an in-process dev network (`vigil sim <scenario>` or `vigil sim
// -script file`), prints its timeline as it goes, then a verdict table per location and the
// figures, and exits 1 when the history has a violation or a healthy endpoint flipped.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if isRealSim(args) {
		return runSimReal(ctx, args, stdout, stderr)
	}
	fs := newFlagSet("sim", stderr)
	file := fs.String("f", "", "configuration of the network, whose checks probe the dev network's targets (default: the demo, examples/demo.yaml, built into vigil)")
	script := fs.String("script", "", "run the steps of this file instead of a named scenario")
	every := fs.Duration("query-interval", 20*time.Millisecond, "how often each location is asked one query")
	slack := fs.Duration("slack", 0, "widen each query's window by this much on both sides when checking the history")
	logLevel := fs.String("log-level", "error", "debug, info, warn or error: the network's logs, on stderr")
	seed := fs.Uint64("seed", 1, "chaos: the seed of the generated script")
	duration := fs.Duration("duration", 60*time.Second, "chaos: how long the faults go on (the sum of the holds)")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	// `vigil sim chaos -seed N`: the flags may follow the scenario's name.
	chaos := fs.NArg() > 0 && fs.Arg(0) == "chaos"
	if chaos {
		if code, stop := parseFlags(ctx, fs, fs.Args()[1:], stdout, stderr); stop {
			return code
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "vigil sim: -log-level: %v\n", err)
		return 2
	}
	if *script == "" && fs.NArg() >= 1 && fs.Arg(0) == sim.DDoSName {
		return runSimDDoS(ctx, fs.Args()[1:], level, stdout, stderr)
	}
	regions := dev.DefaultConfig().Regions
	sc, ok, err := simScript(stdout, *script, chaos, fs.Args(), *seed, *duration, regions)
	if !ok {
		fs.Usage()
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 2
	}
	return runSimNetwork(ctx, *file, regions, sim.Options{
		Script: sc, QueryInterval: *every, Slack: *slack, Timeline: stdout,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}, stdout, stderr)
}

// simScript picks the script of an in-process run from the arguments: the file script, a
// chaos script of seed and duration (written to stdout) or the named scenario. ok is false
// when the arguments name none, or more than one.
func simScript(stdout io.Writer, script string, chaos bool, args []string, seed uint64, duration time.Duration, regions []string) (sc sim.Script, ok bool, err error) {
	switch {
	case script != "" && len(args) == 0:
		f, err := os.Open(script)
		if err != nil {
			return sim.Script{}, true, err
		}
		defer f.Close()
		sc, err = sim.ParseScript(script, f, regions)
		return sc, true, err
	case chaos && script == "" && len(args) == 0:
		if sc, err = sim.Chaos(seed, duration, regions); err == nil {
			fmt.Fprintf(stdout, "vigil sim: chaos, seed %d, %v of faults; the script (replay: save it and run vigil sim -script FILE):\n", seed, duration)
			err = sim.WriteScript(stdout, sc)
		}
		return sc, true, err
	case script == "" && len(args) == 1:
		sc, err = sim.Scenario(args[0], regions)
		return sc, true, err
	}
	return sim.Script{}, false, nil
}

// runSimNetwork runs opts.Script on a dev network configured by the file (the embedded demo
// when file is empty), in a temporary data directory, writes the report and PASS or FAIL, and returns the exit code.
func runSimNetwork(ctx context.Context, file string, regions []string, opts sim.Options, stdout, stderr io.Writer) int {
	doc, _, code := loadDocument(file, stderr)
	if doc == nil {
		return code
	}
	dir, err := os.MkdirTemp("", "vigil-sim-")
	if err != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	opts.Document, opts.DataDir = doc, dir
	fmt.Fprintf(stdout, "vigil sim: scenario %s on regions %s\n", opts.Script.Name, strings.Join(regions, ", "))
	res, err := sim.Run(ctx, opts)
	if werr := res.WriteReport(stdout); werr != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", werr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 1
	}
	if !res.Passed() {
		fmt.Fprintln(stdout, "\nFAIL")
		return 1
	}
	fmt.Fprintln(stdout, "\nPASS")
	return 0
}

// isRealSim reports whether `vigil sim` was asked for a real-process run.
func isRealSim(args []string) bool {
	for _, a := range args {
		if a == "-real" || a == "--real" {
			return true
		}
	}
	return false
}
