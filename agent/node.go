package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/internal/tlsconf"
	"github.com/vigil-dns/vigil/location"
)

// SourceStatic: the configuration was given to the node (Config.Static).
const SourceStatic state.Source = "static"

// Node is one running agent: its roles, its gossip membership, its configuration and its
// HTTP listener. Create it with New (which binds every socket, so that addresses are known),
// then Run it. Its read-only methods are safe for concurrent use at any time.
type Node struct {
	cfg        Config
	log        *slog.Logger
	reg        prometheus.Registerer
	gat        prometheus.Gatherer
	m          *metrics
	lm         *locationMetrics // nil without the location role
	tlsMetrics *tlsconf.Metrics // nil without Config.TLS (tls.go)

	ctl     *controlRole // nil without the control role
	pool    *gossip.Pool // nil without a data-plane role
	watcher *client.Watcher
	chk     *checker.Checker // nil without the checker role
	dns     *location.Server // nil without the location role
	httpLn  net.Listener     // nil when HTTP is off
	http    *httpServer

	memberCh chan struct{} // membership changed (buffer 1)
	started  time.Time
	ran      atomic.Bool

	mu sync.Mutex // guards everything below
	// state is the configuration; settings its regions, quorum and name servers; engineCh
	// what changed in it that a location's verdict engine has not taken yet.
	settings *config.Document
	state    *state.State
	source   state.Source
	engineCh engineChanges
	// asg is the checker's assignment: the plan of every check's shards (a location's expected
	// checkers, too), what the checker was given and what it hands off (assign.go).
	asg checker.Assignment
	loc locationState
	ovr overrideLayer // maintenance overrides (overrides.go)

	// zonesMu serialises installs of zones; zonesAt is the configuration the DNS server's
	// zones were last brought to.
	zonesMu sync.Mutex
	// signers are the DNSSEC signers of the signed zones (dnssec.go); guarded by zonesMu.
	signers signers
	zonesAt *state.State
	// transfers is what the DNS server was last given of the zones it transfers out, by apex
	// (transfers.go); guarded by zonesMu.
	transfers map[string]location.ZoneTransfer
	// xfrKeys are the TSIG keys the DNS server was last given: those of Config.TSIGKeys and
	// those of the control plane this location opens (transfers.go); guarded by zonesMu.
	xfrKeys xfrKeys
	// xfrDegraded says, by apex, why a zone this location feeds to secondaries lacks a key
	// of one of them (readiness: degraded).
	xfrDegraded atomic.Pointer[map[string]string]
}

// New validates cfg, binds the node's sockets (gossip, DNS, HTTP, raft and API) and prepares
// every role. Nothing runs until Run; if Run is never called, Close releases the sockets.
func New(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, memberCh: make(chan struct{}, 1), source: state.SourceNone,
		asg: *checker.NewAssignment(cfg.Region, cfg.ID)}
	if n.log == nil {
		n.log = slog.Default()
	}
	n.log = n.log.With("node", cfg.ID)
	warnDNSSEC(cfg, n.log)
	n.reg, n.gat = cfg.Registerer, cfg.Gatherer
	if n.reg == nil {
		r := prometheus.NewRegistry()
		n.reg, n.gat = r, r
	} else if n.gat == nil {
		if g, ok := n.reg.(prometheus.Gatherer); ok {
			n.gat = g
		}
	}
	m, err := newMetrics(n.reg)
	if err != nil {
		return nil, err
	}
	n.m = m
	if err := n.setupTLS(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			n.Close()
		}
	}()
	if cfg.Roles.Has(RoleControl) {
		ctl, err := newControlRole(cfg, n.reg, n.tlsMetrics, n.log)
		if err != nil {
			return nil, err
		}
		n.ctl = ctl
		n.cfg.Control.APIURL = ctl.cfg.APIURL
	}
	// The HTTP listener is bound before the pool starts: its address goes into the node's
	// gossip metadata (the network view's way to the other locations' verdicts).
	if cfg.HTTPAddr != "off" {
		ln, err := listenHTTP(cfg.HTTPAddr, cfg.HTTPLimits, n.reg)
		if err != nil {
			return nil, err
		}
		n.httpLn = ln
	}
	if cfg.Roles.Has(RoleChecker) || cfg.Roles.Has(RoleLocation) {
		if err := n.newPool(); err != nil {
			return nil, err
		}
		if err := n.newConfigSource(); err != nil {
			return nil, err
		}
	}
	if cfg.Roles.Has(RoleChecker) {
		if err := n.newChecker(); err != nil {
			return nil, err
		}
	}
	if cfg.Roles.Has(RoleLocation) {
		if err := n.newLocation(); err != nil {
			return nil, err
		}
	}
	n.http = newHTTPServer(n)
	ok = true
	return n, nil
}

// newConfigSource sets up where the data plane's configuration comes from: the static
// document, or a Watcher with its disk copy (which it loads now, so that a restarted node
// serves at once without the control plane).
func (n *Node) newConfigSource() error {
	if n.cfg.Static != nil {
		n.setConfig(state.NewState(n.cfg.Static), SourceStatic)
		// The state holds the configuration now: the node keeps no second copy of it.
		n.cfg.Static = nil
		return nil
	}
	voters := n.cfg.Voters
	if len(voters) == 0 && n.ctl != nil {
		voters = []string{n.cfg.Control.APIURL}
	}
	w, err := client.NewWatcher(client.WatcherConfig{
		Voters: voters, Token: n.cfg.Token, CachePath: filepath.Join(n.cfg.DataDir, "config.json"),
		Client: n.cfg.WatcherClient, RetryMax: 2 * time.Second, Logger: n.log, Registerer: n.reg,
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.watcher = w
	if s, src := w.Current(); s != nil {
		n.setConfig(s, src)
	}
	return nil
}

// Close releases what New bound, for a node that will not Run. Run releases everything
// itself when its context ends.
func (n *Node) Close() {
	if n.ran.Load() {
		return
	}
	if n.pool != nil {
		n.pool.Shutdown()
	}
	if n.httpLn != nil {
		n.httpLn.Close()
	}
	if n.dns != nil {
		closeDNS(n.dns)
	}
	if n.loc.hist != nil {
		_ = n.loc.hist.Close()
	}
	if n.ctl != nil {
		n.ctl.close()
	}
}

// Run runs every role until ctx ends, then stops them (data plane first, control plane last)
// and returns once every goroutine has stopped. Run may be called once.
func (n *Node) Run(ctx context.Context) error {
	if n.ran.Swap(true) {
		return errors.New("node: run called twice")
	}
	n.started = time.Now()
	n.http.freeze()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &running{errs: make(chan error, 8), cancel: cancel}
	n.start(ctx, r)
	defer r.ctlCancel()
	defer r.poolCancel()
	n.log.Info("node: running", "roles", n.cfg.Roles.String(), "region", n.cfg.Region)
	err := n.stop(r, r.wait(ctx))
	n.log.Info("node: stopped")
	return err
}

// running is what Run started: the roles' goroutines, which end with Run's context, and the
// control plane and the pool, which have contexts of their own since they stop after the roles.
type running struct {
	wg         sync.WaitGroup
	errs       chan error         // the first errors of the roles
	cancel     context.CancelFunc // ends the roles
	ctlDone    chan error         // the control plane's end; nil without it, or once received
	ctlCancel  context.CancelFunc
	poolDone   chan error // the pool's end; nil without it, or once received
	poolCancel context.CancelFunc
}

// start starts the control plane, then every role's goroutine; a role that fails ends ctx
// through r.cancel.
func (n *Node) start(ctx context.Context, r *running) {
	goRun := func(name string, f func(context.Context) error) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				r.errs <- fmt.Errorf("node: %s: %w", name, err)
				r.cancel()
			}
		}()
	}
	// The control plane outlives the data plane: it gets its own context, ended last.
	ctlCtx, ctlCancel := context.WithCancel(context.Background())
	r.ctlCancel = ctlCancel
	if n.ctl != nil {
		ctlDone := make(chan error, 1)
		r.ctlDone = ctlDone
		go func() { ctlDone <- n.ctl.run(ctlCtx, n.log) }()
	}
	if n.httpLn != nil {
		goRun("http", n.http.serve(n.httpLn))
	}
	// The pool outlives the roles that use it, so that a stopping checker's withdrawals
	// still spread before the node leaves.
	poolCtx, poolCancel := context.WithCancel(context.Background())
	r.poolCancel = poolCancel
	if n.pool != nil {
		poolDone := make(chan error, 1)
		r.poolDone = poolDone
		go func() { poolDone <- n.pool.Run(poolCtx) }()
		if n.watcher != nil {
			goRun("watcher", n.watcher.Run)
		}
	}
	if n.chk != nil {
		goRun("checker", func(ctx context.Context) error {
			n.awaitJoin(ctx, maxJoinWait)
			return n.chk.Run(ctx)
		})
	}
	if n.dns != nil {
		goRun("dns", n.dns.Serve)
		goRun("verdicts", n.runVerdicts)
		goRun("overrides", n.runOverrides)
		goRun("history", n.runHistoryMarks)
		goRun("locality", n.runLocality)
	}
	if n.pool != nil {
		goRun("data plane", n.loop)
	}
}

// wait waits until ctx ends, a role fails, or the control plane or the pool stops on its own,
// and returns the error that ended the run, nil when ctx ended.
func (r *running) wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-r.errs:
	case err = <-r.ctlDone:
		r.ctlDone = nil
		if err != nil {
			err = fmt.Errorf("node: control: %w", err)
		}
	case err = <-r.poolDone:
		r.poolDone = nil
		if err == nil {
			err = errors.New("stopped before the node did")
		}
		err = fmt.Errorf("node: gossip: %w", err)
	}
	return err
}

// stop stops what start started, in this order: the roles, the history, the pool, the
// control plane last. It returns err, the error that ended the run, or else the first error
// of the pool or the control plane.
func (n *Node) stop(r *running, err error) error {
	r.cancel()
	r.wg.Wait()
	if n.loc.hist != nil {
		if herr := n.loc.hist.Close(); herr != nil {
			n.log.Warn("node: history: closing", "err", herr)
		}
	}
	r.poolCancel()
	if r.poolDone != nil {
		if perr := <-r.poolDone; perr != nil && err == nil {
			err = fmt.Errorf("node: gossip: %w", perr)
		}
	}
	r.ctlCancel()
	if r.ctlDone != nil {
		if cerr := <-r.ctlDone; cerr != nil && err == nil {
			err = fmt.Errorf("node: control: %w", cerr)
		}
	}
	return err
}

// maxJoinWait bounds how long a checker (or a location) waits for the pool before it probes
// (or decides) anyway.
const maxJoinWait = 10 * time.Second

// awaitJoin waits until the node has joined the pool (it sees another member, or it has no
// peers to join), at most max or until ctx ends. A checker that published before joining
// would spread its first reports to nobody, and they would wait for anti-entropy.
func (n *Node) awaitJoin(ctx context.Context, max time.Duration) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for len(n.cfg.Gossip.Join) > 0 && len(n.pool.Members()) < 2 {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			n.log.Warn("node: not joined to the pool yet; going on anyway", "after", max)
			return
		case <-poll.C:
		}
	}
}

// loop is the data plane's one goroutine of coordination: it applies configuration changes,
// recomputes assignment on membership changes, and ends checker handoffs on a steady tick.
// (A location's verdicts follow their own events: runVerdicts.)
func (n *Node) loop(ctx context.Context) error {
	var changed <-chan struct{}
	// follow takes the Watcher's configuration, after asking to hear of the next change, so
	// that a change between the two is never missed.
	follow := func() {
		if n.watcher == nil {
			return
		}
		changed = n.watcher.Changed()
		if s, src := n.watcher.Current(); s != nil {
			n.setConfig(s, src)
		}
	}
	tick := time.NewTicker(n.cfg.EvalInterval)
	defer tick.Stop()
	follow()
	n.reassign()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			follow()
			n.reassign()
		case <-n.memberCh:
			n.reassign()
		case <-tick.C:
			if n.chk != nil && n.handingOff() {
				n.reassign()
			}
		}
	}
}

// setConfig installs a configuration. What changed since the one in use is applied at its
// cost: the assignment plan is changed per changed check and the location's zones are
// patched per changed zone; a change of settings, a new source or a configuration taken
// whole rebuilds them.
func (n *Node) setConfig(s *state.State, src state.Source) {
	n.mu.Lock()
	if src == n.source && (s == n.state || (n.state != nil && n.state.Index == s.Index && s.Index != 0)) {
		n.mu.Unlock()
		return
	}
	ch := state.Changes{Full: true}
	if n.state != nil && src == n.source && n.watcher != nil {
		ch = n.watcher.ChangesSince(n.state.Index)
	}
	settings := s.Settings()
	if n.cfg.Roles.Has(RoleLocation) {
		n.engineCh.add(ch, n.settings, &settings, s.NumChecks())
	}
	n.state, n.settings, n.source = s, &settings, src
	n.m.configIndex.Set(float64(s.Index))
	n.configureLocked(s, ch)
	n.mu.Unlock()
	n.log.Info("node: configuration installed", "index", s.Index, "source", string(src),
		"checks", s.NumChecks(), "zones", s.NumZones(), "whole", ch.Full || ch.Settings,
		"changed_checks", len(ch.Checks), "changed_zones", len(ch.Zones))
	if n.chk != nil && !slices.Contains(s.Regions(), n.cfg.Region) {
		n.log.Warn("node: this checker's region is not in the configuration: it probes nothing", "region", n.cfg.Region)
	}
	if n.dns != nil {
		n.installZones(s, ch)
		n.setOverrides(s)
	}
}
