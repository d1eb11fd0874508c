package netlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/oracle"
	"github.com/vigil-dns/vigil/lab/sim"
	"github.com/vigil-dns/vigil/regions"
)

// DefaultRegions returns the regions of a network unless told otherwise; more may be added,
// up to MaxRegions.
func DefaultRegions() []string { return []string{"us-east", "eu-west", "sa-east"} }

// Options configure a run.
type Options struct {
	// Script is the scenario: its steps run in order once the network is ready.
	Script sim.Script
	// Regions are the network's regions, MinRegions to MaxRegions; default DefaultRegions().
	Regions []string
	// Binary is the vigil binary every process runs; default the running executable.
	Binary string
	// Checkers is the number of checkers per region; default 2.
	Checkers int
	// Voters is the number of control voters, spread over the regions in turn; default 3.
	Voters int
	// QueryInterval is how often each location is asked one query; default 50ms.
	QueryInterval time.Duration
	// QueryTimeout is how long an answer is waited for; default 1s.
	QueryTimeout time.Duration
	// Ready bounds the wait for every location to answer every region; default 120s.
	Ready time.Duration
	// Keep, when set, is where the run's directory (logs of every process, the record as
	// record.json) is moved at the end; by default it is removed.
	Keep string
	// LogLevel is the processes' log level; default info.
	LogLevel string
	// Evidence, when set, records every location's verdicts with their evidence and its
	// gossip members every second in the run's directory (evidence/), for a reader of the
	// run; nothing judges them. Useful with Keep.
	Evidence bool
	// AgentArgs are added to every data-plane agent's flags.
	AgentArgs []string
	// Bounds are what the oracle assumes of the processes' speed; default
	// oracle.DefaultBounds() (the agents run with their default timings).
	Bounds oracle.Bounds
	// Timeline, when set, receives the run's timeline as it goes.
	Timeline io.Writer
}

// LinkStats are what one link's wire did.
type LinkStats struct {
	A, B   string
	AB, BA WireStats
}

// Result is what a run did and measured.
type Result struct {
	// Run is the record of the run: the document, the topology, every fault as applied
	// and every query made, for the oracle.
	Run oracle.Run
	// Report is the oracle's judgement of Run; nil when the run was not made to its end.
	Report *oracle.Report
	// Writes are the control-plane writes made from ready to the end (sim.Writer: five a
	// second through the voters' APIs) and what linearizable reads found of every
	// acknowledged one; nil when the run was not made to its end.
	Writes *oracle.WriteStats
	// Dropped counts queries not kept (the record of a location was full).
	Dropped int
	// ReadyIn is how long the network took to answer every region at every location.
	ReadyIn time.Duration
	// Links are the wires' counters.
	Links []LinkStats
	// Unplanned lists the processes that exited without being killed.
	Unplanned []string
	// CPU is the processor time of the harness and of the processes it ran (and reaped),
	// over Wall, the run's duration from start to teardown.
	CPUHarness, CPUProcesses, Wall time.Duration
	// Kept is where the run's directory was moved, when Options.Keep was set.
	Kept string
}

// run is one run in progress.
type run struct {
	o      Options
	topo   *Topology
	fleet  *fleet
	faults *regions.Faults
	client *http.Client
	start  time.Time // ready

	mu     sync.Mutex
	events []oracle.Event
}

// Supported reports whether the script can run on a real network: every step must be one
// the harness applies (down, up, cut, heal, hold, kill, start, kill-leader, cut-oneway, loss,
// latency). `wait` is not: a real run's verdicts are judged from the answers, not read from
// the locations.
func Supported(sc sim.Script) error {
	var errs []error
	if sc.Network != "" && sc.Network != sim.NetworkNodes {
		errs = append(errs, fmt.Errorf("netlab: %s: network %s: a real network runs real processes; leave the network step out", sc.Name, sc.Network))
	}
	for _, st := range sc.Steps {
		switch st.Kind {
		case sim.StepDown, sim.StepUp, sim.StepCut, sim.StepHeal, sim.StepHold, sim.StepKill, sim.StepStart,
			sim.StepKillLeader, sim.StepCutOneWay, sim.StepLoss, sim.StepLatency:
		default:
			errs = append(errs, fmt.Errorf("netlab: %s:%d: %s does not run on a real network (steps: down, up, cut, heal, hold, kill, start, kill-leader, cut-oneway, loss, latency)", sc.Name, st.Line, st.Kind))
		}
	}
	return errors.Join(errs...)
}

// Run builds a real network, starts every process, waits until every location answers
// every region, then runs the script while a client in each region asks its location for
// every A record set of the demo zone in turn. It removes everything it made before it
// returns, also when ctx ends. The error says why the run could not be made; what the
// answers were is in the result's record, for a judge.
func Run(ctx context.Context, o Options) (res Result, err error) {
	if err := Check(); err != nil {
		return res, err
	}
	if err := Supported(o.Script); err != nil {
		return res, err
	}
	if err := o.defaults(); err != nil {
		return res, err
	}
	began := time.Now()
	ru0 := rusage()
	if removed, err := Sweep(ctx); err != nil {
		return res, err
	} else if len(removed) > 0 {
		r := &run{o: o, faults: regions.NewFaults(o.Regions...)}
		r.note("removed what dead runs left: " + strings.Join(removed, ", "))
	}
	dir, prefix, err := runDir()
	if err != nil {
		return res, err
	}
	r := &run{o: o, faults: regions.NewFaults(o.Regions...)}
	defer func() {
		err = errors.Join(err, r.teardown(&res, dir))
		ru1 := rusage()
		res.CPUHarness = cpu(ru1[0]) - cpu(ru0[0])
		res.CPUProcesses = cpu(ru1[1]) - cpu(ru0[1])
		res.Wall = time.Since(began)
	}()
	if r.topo, err = buildTopology(ctx, prefix, o.Regions); err != nil {
		return res, err
	}
	r.client = r.topo.httpClient()
	if r.fleet, err = newFleet(r.topo, fleetOptions{bin: o.Binary, dir: dir, voters: o.Voters, checkers: o.Checkers,
		logLevel: o.LogLevel, extraAgentArgs: o.AgentArgs}); err != nil {
		return res, err
	}
	doc, err := Document(o.Regions)
	if err != nil {
		return res, err
	}
	res.Run = oracle.Run{Document: doc, Topology: r.topology()}
	if err := r.startNetwork(ctx, doc); err != nil {
		return res, err
	}
	var queriers []*querier
	defer func() {
		for _, q := range queriers {
			q.close()
		}
	}()
	if queriers, err = r.newQueriers(ctx); err != nil {
		return res, err
	}
	if err := r.ready(ctx, queriers); err != nil {
		return res, err
	}
	res.ReadyIn = time.Since(began)
	r.start = time.Now()
	res.Run.Start = r.start
	r.note(fmt.Sprintf("ready in %v: every location answers every region; asking each for %s every %v",
		res.ReadyIn.Round(time.Millisecond), strings.Join(QueryNames(), " "), o.QueryInterval))
	writer, err := r.newWriter()
	if err != nil {
		return res, err
	}
	runErr := r.drive(ctx, dir, writer, queriers, &res)
	if runErr != nil {
		return res, runErr
	}
	ws := writer.Verify(ctx, 30*time.Second)
	res.Writes = &ws
	rep, err := oracle.Judge(res.Run, o.Bounds)
	if err != nil {
		return res, fmt.Errorf("netlab: the oracle: %w", err)
	}
	res.Report = &rep
	return res, nil
}

// runDir makes the directory of a run and returns it with the prefix of the names of what
// the run makes: the directory's random suffix tells apart the runs of one process
// ("vgl1234-5678-us-east").
func runDir() (dir, prefix string, err error) {
	owner := fmt.Sprintf("%s%d-", namePrefix, os.Getpid())
	dir, err = os.MkdirTemp("", owner+"run-")
	if err != nil {
		return "", "", fmt.Errorf("netlab: %w", err)
	}
	return dir, owner + strings.TrimPrefix(filepath.Base(dir), owner+"run-") + "-", nil
}

// rusage returns the resources used so far by this process and by its waited-for children.
func rusage() (ru [2]syscall.Rusage) {
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru[0])
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru[1])
	return ru
}

// newQueriers returns a querier of every location; on an error, those made so far.
func (r *run) newQueriers(ctx context.Context) ([]*querier, error) {
	var queriers []*querier
	for _, l := range r.fleet.ofKind(KindLocation) {
		q, err := newQuerier(ctx, l, QueryNames(), r.o.QueryTimeout)
		if err != nil {
			return queriers, err
		}
		queriers = append(queriers, q)
	}
	return queriers, nil
}

// newWriter returns the writer of control-plane changes during the run, through every voter.
func (r *run) newWriter() (*sim.Writer, error) {
	var apis []string
	for _, v := range r.fleet.ofKind(KindVoter) {
		apis = append(apis, v.Addrs["api"])
	}
	writer, err := sim.NewWriter(apis, Zone+".", r.fleet.token, r.client)
	if err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	return writer, nil
}

// drive runs the script while the writer writes, the queriers ask and (with Evidence) the
// evidence is recorded in dir, stops them all, and records the end, the queries and the
// events in res. It returns the script's error.
func (r *run) drive(ctx context.Context, dir string, writer *sim.Writer, queriers []*querier, res *Result) error {
	qctx, stopQueries := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { writer.Run(qctx) })
	for _, q := range queriers {
		wg.Go(func() { q.run(qctx, r.o.QueryInterval) })
	}
	if r.o.Evidence {
		wg.Go(func() { r.recordEvidence(qctx, dir) })
	}
	runErr := r.script(ctx)
	stopQueries()
	wg.Wait()
	res.Run.End = time.Now()
	for _, q := range queriers {
		qs, d := q.recorded()
		res.Run.Queries = append(res.Run.Queries, qs...)
		res.Dropped += d
	}
	r.mu.Lock()
	res.Run.Events = slices.Clone(r.events)
	r.mu.Unlock()
	return runErr
}

// defaults fills in the options left empty and checks the others.
func (o *Options) defaults() error {
	if len(o.Regions) == 0 {
		o.Regions = DefaultRegions()
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("netlab: the vigil binary: %w", err)
		}
		o.Binary = exe
	}
	if o.Checkers == 0 {
		o.Checkers = 2
	}
	if o.Checkers < 1 || o.Checkers > 3 {
		return fmt.Errorf("netlab: %d checkers per region: want 1 to 3 (the names scripts use)", o.Checkers)
	}
	if o.Voters == 0 {
		o.Voters = 3
	}
	if o.Voters < 1 || o.Voters > 3 {
		return fmt.Errorf("netlab: %d voters: want 1 to 3 (the names scripts use)", o.Voters)
	}
	if o.QueryInterval <= 0 {
		o.QueryInterval = 50 * time.Millisecond
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = time.Second
	}
	if o.Ready <= 0 {
		o.Ready = 120 * time.Second
	}
	if o.Bounds == (oracle.Bounds{}) {
		o.Bounds = oracle.DefaultBounds()
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	return nil
}

// cpu is the user and system time of a rusage.
func cpu(ru syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startNetwork starts the targets, the voters (and waits for their cluster), applies the
// document, then starts the locations and checkers.
func (r *run) startNetwork(ctx context.Context, doc *config.Document) error {
	for _, p := range r.fleet.ofKind(KindTarget) {
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range r.fleet.ofKind(KindTarget) {
		if err := until(ctx, 15*time.Second, func() error { return r.setTargetDown(ctx, p.Region.Name, false) }); err != nil {
			return fmt.Errorf("netlab: target %s did not answer: %w%s", p.ID, err, logTail(p))
		}
	}
	voters := r.fleet.ofKind(KindVoter)
	for _, p := range voters {
		if err := p.start(); err != nil {
			return err
		}
	}
	if len(voters) > 0 {
		formed := func() error {
			cv, err := r.cluster(ctx, voters[0])
			if err == nil && (cv.Leader == "" || len(cv.Servers) < len(voters)) {
				err = fmt.Errorf("%d of %d voters, leader %q", len(cv.Servers), len(voters), cv.Leader)
			}
			if err == nil {
				err = r.putDocument(ctx, voters[0], doc)
			}
			return err
		}
		if err := until(ctx, 60*time.Second, formed); err != nil {
			return fmt.Errorf("netlab: the control plane did not form and take the document: %w%s", err, logTail(voters...))
		}
	}
	r.note(fmt.Sprintf("control plane of %d voters formed, document applied", len(voters)))
	for _, kind := range []string{KindLocation, KindChecker} {
		for _, p := range r.fleet.ofKind(kind) {
			if err := p.start(); err != nil {
				return err
			}
		}
	}
	return nil
}

// ready waits until every location answers the multivalue name with every region's value.
func (r *run) ready(ctx context.Context, qs []*querier) error {
	all := QueryNames()[0]
	var want []string
	for i := range r.topo.Regions {
		want = append(want, RecordValue(i+1).String())
	}
	check := func() error {
		for _, q := range qs {
			a := q.ask(ctx, all)
			got := slices.Sorted(slices.Values(a.Values))
			if a.Rcode != 0 || !slices.Equal(got, want) {
				return fmt.Errorf("%s answers %s with %v (rcode %d, %s)", q.location.ID, all, got, a.Rcode, a.Err)
			}
		}
		return nil
	}
	if err := until(ctx, r.o.Ready, check); err != nil {
		return fmt.Errorf("netlab: not ready within %v: %w%s", r.o.Ready, err, logTail(r.fleet.ofKind(KindLocation)...))
	}
	return nil
}

// until calls f every 200ms until it returns nil, ctx ends or within has passed; it returns
// f's last error.
func until(ctx context.Context, within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("netlab: %w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// logTail returns the last lines of each process's log, for an error message.
func logTail(ps ...*Proc) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\n--- %s (last lines of its log):\n%s", p.ID, strings.TrimRight(p.tail(1500), "\n"))
	}
	return b.String()
}

// note writes a line of the timeline, with the time since ready.
func (r *run) note(what string) {
	if r.o.Timeline == nil {
		return
	}
	at := "setup"
	if !r.start.IsZero() {
		at = fmt.Sprintf("%8.3fs", time.Since(r.start).Seconds())
	}
	fmt.Fprintf(r.o.Timeline, "[%s] %s\n", at, what)
}

// teardown kills every process, removes the links and namespaces, and removes (or keeps)
// the run's directory; it fills in what the result takes from them.
func (r *run) teardown(res *Result, dir string) error {
	var errs []error
	if r.fleet != nil {
		for _, p := range slices.Backward(r.fleet.procs) {
			if p.running() {
				if err := p.kill(); err != nil {
					errs = append(errs, err)
				}
			}
			res.Unplanned = append(res.Unplanned, p.problems()...)
		}
		r.fleet.spawn.close()
	}
	if r.topo != nil {
		for _, l := range r.topo.Links {
			ab, ba := l.Stats()
			res.Links = append(res.Links, LinkStats{A: l.A.Name, B: l.B.Name, AB: ab, BA: ba})
		}
		errs = append(errs, r.topo.close())
	}
	if data, err := json.MarshalIndent(res.Run, "", " "); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "record.json"), data, 0o644)
	}
	if r.o.Keep != "" {
		if err := os.Rename(dir, r.o.Keep); err != nil {
			errs = append(errs, fmt.Errorf("netlab: keep the run's directory: %w", err))
		} else {
			res.Kept = r.o.Keep
		}
	}
	if res.Kept == "" {
		errs = append(errs, os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}

// topology says where the targets and processes are, for the oracle: each region's demo
// target is named after its region, and each region's check probes it.
func (r *run) topology() oracle.Topology {
	t := oracle.Topology{Checks: map[string]string{}}
	for _, reg := range r.topo.Regions {
		t.Regions = append(t.Regions, reg.Name)
		t.Targets = append(t.Targets, oracle.Target{Name: reg.Name, Region: reg.Name})
		t.Checks[CheckID(reg.Name)] = reg.Name
	}
	roles := map[string]oracle.Role{KindChecker: oracle.RoleChecker, KindLocation: oracle.RoleLocation, KindVoter: oracle.RoleVoter}
	for _, p := range r.fleet.procs {
		if role, ok := roles[p.Kind]; ok {
			t.Nodes = append(t.Nodes, oracle.Node{Name: p.ID, Region: p.Region.Name, Roles: []oracle.Role{role}})
		}
	}
	return t
}
