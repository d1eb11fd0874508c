package sim

// A scripted run (a named scenario or a script from a file): its configuration (Options) and
// Run, which starts the network the script names, records the history while runner.go runs the
// script, and audits it. Its figures are in run_figures.go and its report in run_report.go.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/dev"
	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
)

// Options configure a run.
type Options struct {
	// Script is the scenario to run.
	Script Script
	// Document is the configuration of the network: the demo's, whose checks probe the dev
	// network's targets (their ports are those of dev.DefaultConfig and are moved to free ones).
	Document *config.Document
	// DataDir holds the network's data.
	DataDir string
	// QueryInterval is how often each location is asked one query. Default 20ms.
	QueryInterval time.Duration
	// SampleInterval is how often every location's verdicts are sampled. Default 50ms.
	SampleInterval time.Duration
	// Slack widens each query's window on both sides when the history is checked. Default 0:
	// the sampling brackets already bound when a verdict was in force.
	Slack time.Duration
	// Ready bounds the wait for every verdict to be healthy before the script. Default 60s.
	Ready time.Duration
	// Timeline, when set, receives the timeline as the run goes.
	Timeline io.Writer
	// Logger receives the network's logs; default: discarded below warnings.
	Logger *slog.Logger
}

// withDefaults returns o with every default filled in.
func (o Options) withDefaults() Options {
	if o.QueryInterval <= 0 {
		o.QueryInterval = 20 * time.Millisecond
	}
	if o.SampleInterval <= 0 {
		o.SampleInterval = 50 * time.Millisecond
	}
	if o.Ready <= 0 {
		o.Ready = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Run starts the network the script names (the dev network by default), waits until every
// location holds a healthy verdict of every check, then runs the script while asking every
// location for every A record set of the document and sampling their verdicts; it stops the
// network and audits the history. The error is not nil when the run could not be made (a wait
// that never settled is one); the history's violations are in the result.
func Run(ctx context.Context, o Options) (res Result, err error) {
	o = o.withDefaults()
	if o.Document == nil {
		return res, errors.New("sim: no document")
	}
	kind, ok := networkKinds()[cmp.Or(o.Script.Network, NetworkDev)]
	if !ok {
		return res, fmt.Errorf("sim: unknown network %q (networks: %s, %s, %s, %s)", o.Script.Network, NetworkDev, NetworkNodes, NetworkPoison, NetworkPoisonUnsharded)
	}
	cfg := dev.DefaultConfig()
	res.Scenario, res.Regions = o.Script.Name, cfg.Regions
	doc, targets, err := placeTargets(o.Document, &cfg)
	if err != nil {
		return res, err
	}
	if kind.document != nil {
		if doc, err = kind.document(doc, targets, cfg.Regions); err != nil {
			return res, err
		}
	}
	auditor := answeraudit.New(doc, o.Slack)
	names := sortedKeys(auditor.Sets)
	if len(names) == 0 {
		return res, errors.New("sim: the document has no A record set to ask for")
	}

	netCtx, stop := context.WithCancel(ctx)
	n, wait, err := kind.start(netCtx, o, cfg, doc)
	if err != nil {
		stop()
		return res, err
	}
	defer func() {
		stop()
		if werr := wait(); werr != nil && err == nil {
			o.Logger.Warn("sim: network stopped with errors", "err", werr)
		}
	}()

	r := &runner{o: o, res: &res, regions: cfg.Regions, doc: doc, targets: targets, net: n,
		rec: newOracleRecorder(o.Script, cfg.Regions, cfg.CheckersPerRegion, targets)}
	r.sampler = newSampler(n.Verdicts, cfg.Regions)
	wr, err := startWriter(o.Script, n, doc)
	if err != nil {
		return res, err
	}
	end, runErr := r.record(ctx, netCtx, names, wr)
	checks := checksByID(doc)
	auditor.Starved = func(_, check string, _, to time.Time) bool { return starvedBefore(checks, check, to, res.Stalls) }
	res.Audit = auditor.Audit(res.History)
	if !r.readyAt.IsZero() {
		r.rec.judge(&res, doc, r.readyAt, end)
	}
	res.Flips, res.StarvedFlips = starvedFlips(r.flips(), res.Stalls, doc)
	res.ReadyAt, res.Unmodelled = r.readyAt, r.unmodelled
	n.addFigures(&res)
	if wr != nil && runErr == nil {
		ws := wr.Verify(ctx, 30*time.Second)
		res.Writes = &ws
	}
	return res, runErr
}

// record runs the script while the sampler and the stall monitor record and, from the moment
// the network is ready, every location is asked for names and the writer (when there is one)
// writes; then it stops them all, puts what they recorded in the result and returns when the
// recording ended.
func (r *runner) record(ctx, netCtx context.Context, names []string, wr *Writer) (time.Time, error) {
	o, res := r.o, r.res
	ready := make(chan struct{})
	r.sampler.onChange = func(c answeraudit.Change) {
		select {
		case <-ready:
			r.event(fmt.Sprintf("verdict %s at %s: %s (%s)", c.Check, c.Location, c.State, c.Reason))
		default:
		}
	}
	recCtx, stopRec := context.WithCancel(netCtx)
	var queriers []*querier
	for _, l := range r.regions {
		queriers = append(queriers, &querier{location: l, addr: r.net.DNSAddr(l), names: names, client: &dns.Client{Timeout: time.Second}})
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.sampler.run(recCtx, o.SampleInterval) })
	stalls := &stallMonitor{}
	r.stalls = stalls
	wg.Go(func() { stalls.run(recCtx) })
	wg.Go(func() { stalls.controlProbe(recCtx, shortestTimeout(r.doc)) })
	runErr := func() error {
		faults := NewFaults(r.regions)
		if _, err := r.settle(ctx, faults, o.Ready); err != nil {
			return fmt.Errorf("sim: ready: %w", err)
		}
		r.sampler.arm()
		r.mu.Lock()
		r.readyAt = time.Now()
		r.mu.Unlock()
		close(ready)
		for _, q := range queriers {
			wg.Go(func() { q.run(recCtx, o.QueryInterval) })
		}
		if wr != nil {
			wg.Go(func() { wr.Run(recCtx) })
		}
		r.event(fmt.Sprintf("ready: every location holds a healthy verdict of every check; asking each for %s every %v",
			strings.Join(names, " "), o.QueryInterval))
		return r.script(ctx, faults)
	}()
	stopRec()
	wg.Wait()
	end := time.Now()
	res.History.Changes = r.sampler.history()
	for _, q := range queriers {
		a, d := q.recorded()
		res.History.Answers = append(res.History.Answers, a...)
		res.Dropped += d
	}
	res.Stalls, res.StallsNotKept = stalls.recorded()
	res.Final = r.sampler.states()
	if r.lastRepair.IsZero() {
		res.Counted = r.sampler.extremes()
	} else {
		res.AfterRepair = r.sampler.extremes()
	}
	return end, runErr
}

// placeTargets copies doc, moving the checks that probe the dev network's default target
// ports to free ports; it returns the copy and the region of each check's target.
func placeTargets(doc *config.Document, cfg *dev.Config) (*config.Document, map[string]string, error) {
	out := *doc
	out.Checks = slices.Clone(doc.Checks)
	targets := map[string]string{}
	for _, region := range cfg.Regions {
		_, port, err := net.SplitHostPort(cfg.Targets[region])
		if err != nil {
			return nil, nil, fmt.Errorf("sim: target of %s: %w", region, err)
		}
		free, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		cfg.Targets[region] = "127.0.0.1:" + strconv.Itoa(free)
		for i := range out.Checks {
			c := &out.Checks[i]
			if c.Protocol != config.ProtocolCalculated && strconv.Itoa(c.Target.Port) == port {
				c.Target.Port = free
				targets[c.ID] = region
			}
		}
	}
	return &out, targets, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("sim: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
