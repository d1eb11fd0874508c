//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/lab/netlab"
	"github.com/vigil-dns/vigil/lab/sim"
)

// realScenarioList names the scenarios of vigil sim -real, for its help.
func realScenarioList() string {
	return strings.Join(netlab.Scenarios(), ", ")
}

// runSimReal runs a scenario on real processes in network namespaces (`vigil sim -real
// <scenario>` or `vigil sim -real -script file`): it prints the timeline as it goes, then
// what every location answered, and exits 1 when the run could not be made.
func runSimReal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim -real", stderr)
	fs.Bool("real", true, "run on real processes in network namespaces")
	script := fs.String("script", "", "run the steps of this file instead of a named scenario")
	regions := fs.String("regions", strings.Join(netlab.DefaultRegions(), ","), fmt.Sprintf("comma-separated regions, %d to %d", netlab.MinRegions, netlab.MaxRegions))
	bin := fs.String("vigil", "", "the vigil binary the processes run (default: this one)")
	checkers := fs.Int("checkers", 2, "checkers per region (1 to 3)")
	every := fs.Duration("query-interval", 50*time.Millisecond, "how often each location is asked one query")
	keep := fs.String("keep", "", "move the run's directory (every process's log, record.json) here at the end")
	evidence := fs.Bool("evidence", false, "record every location's verdicts (with evidence) and gossip members each second in the run's directory (use with -keep)")
	logLevel := fs.String("log-level", "info", "the processes' log level (their logs are in the run's directory)")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	// The flags may follow the scenario's name too: `vigil sim -real isolated -keep DIR`.
	scenario := ""
	if fs.NArg() > 0 {
		scenario = fs.Arg(0)
		if code, stop := parseFlags(ctx, fs, fs.Args()[1:], stdout, stderr); stop {
			return code
		}
	}
	names := splitList(*regions)
	if fs.NArg() > 0 || (*script != "") == (scenario != "") {
		fs.Usage() // one of a scenario or a script, and nothing after it
		return 2
	}
	sc, err := realScript(scenario, *script, names)
	if err == nil {
		err = netlab.Supported(sc)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 2
	}
	if err := netlab.Check(); err != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "vigil sim -real: scenario %s on regions %s\n", sc.Name, strings.Join(names, ", "))
	res, err := netlab.Run(ctx, netlab.Options{Script: sc, Regions: names, Binary: *bin, Checkers: *checkers,
		QueryInterval: *every, Keep: *keep, Evidence: *evidence, LogLevel: *logLevel, Timeline: stdout})
	if res.Run.Start.IsZero() {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "\nanswers (changes by location and name; times since ready):")
	_ = netlab.WriteAnswers(stdout, &res.Run)
	writeRealFigures(stdout, res)
	if err != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", err)
		return 1
	}
	return reportRealRun(stdout, stderr, sc.Name, *script, res)
}

// realScript reads the script of a real run: the file script when it is set, else the named
// scenario on the regions names.
func realScript(scenario, script string, names []string) (sim.Script, error) {
	if script == "" {
		return netlab.Scenario(scenario, names)
	}
	f, err := os.Open(script)
	if err != nil {
		return sim.Script{}, err
	}
	defer f.Close()
	return sim.ParseScript(script, f, names)
}

// reportRealRun prints the oracle's judgement of a finished run, the control-plane writes,
// the row for the record and PASS or FAIL, and returns the exit code: 1 when the run failed.
func reportRealRun(stdout, stderr io.Writer, name, script string, res netlab.Result) int {
	fmt.Fprintln(stdout, "\nthe oracle's judgement:")
	if werr := res.Report.Write(stdout); werr != nil {
		fmt.Fprintf(stderr, "vigil sim: %v\n", werr)
	}
	w := res.Writes
	fmt.Fprintf(stdout, "control-plane writes: %d attempted, %d acknowledged, %d checked, %d lost, %d overwritten by a failed write, %d unchecked, %d stale reads%s\n",
		w.Attempted, w.Acknowledged, w.Checked, w.Lost, w.Overwritten, w.Unchecked, w.StaleReads, readBackError(w.ReadBack))
	for _, p := range w.Problems {
		fmt.Fprintf(stdout, "  write: %s\n", p)
	}
	command := "vigil sim -real " + name
	if script != "" {
		command = "vigil sim -real -script " + script
	}
	fmt.Fprintln(stdout, "\nrow (scenario | wrong | flips | unanswered | detection | recovery | writes checked/lost | reproduce):")
	_ = netlab.WriteRow(stdout, name, command, &res)
	slow := netlab.SlowDetections(&res.Run, res.Report)
	for _, s := range slow {
		fmt.Fprintf(stdout, "SLOW DETECTION (over interval x failure_threshold + 2s): %s\n", s)
	}
	if len(res.Unplanned) > 0 || !res.Report.OK() || !w.OK() || len(slow) > 0 {
		fmt.Fprintln(stdout, "\nFAIL")
		return 1
	}
	fmt.Fprintln(stdout, "\nPASS")
	return 0
}

// readBackError says why the last read-back failed, if it did.
func readBackError(e string) string {
	if e == "" {
		return ""
	}
	return "; last read-back failed: " + e
}

// writeRealFigures prints what the harness measured of itself: the links, the processes
// that exited on their own, the processor time.
func writeRealFigures(w io.Writer, res netlab.Result) {
	fmt.Fprintf(w, "\nqueries: %d (%d not kept); ready in %v\n", len(res.Run.Queries), res.Dropped, res.ReadyIn.Round(time.Millisecond))
	for _, l := range res.Links {
		fmt.Fprintf(w, "link %s-%s: %d/%d packets delivered, %d/%d dropped by a full queue (most queued %d/%d)\n",
			l.A, l.B, l.AB.Delivered, l.BA.Delivered, l.AB.Dropped, l.BA.Dropped, l.AB.MaxQueued, l.BA.MaxQueued)
	}
	for _, u := range res.Unplanned {
		fmt.Fprintf(w, "UNPLANNED EXIT: %s\n", u)
	}
	if res.Wall > 0 {
		fmt.Fprintf(w, "CPU: harness %v, processes %v, over %v of wall time (%.2f cores)\n",
			res.CPUHarness.Round(time.Millisecond), res.CPUProcesses.Round(time.Millisecond), res.Wall.Round(time.Millisecond),
			(res.CPUHarness+res.CPUProcesses).Seconds()/res.Wall.Seconds())
	}
	if res.Kept != "" {
		fmt.Fprintf(w, "run directory kept in %s\n", res.Kept)
	}
}
