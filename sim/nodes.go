package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/dev"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/node"
	"github.com/vigil-dns/vigil/regions"
)

// checkersPerRegion is the number of checkers per region of the nodes network.
const checkersPerRegion = 3

// nodesOptions vary the nodes network; the zero value is the network described above.
type nodesOptions struct {
	// checkers is the number of checkers per region; default checkersPerRegion.
	checkers int
	// tune, when set, adjusts each node's configuration before the node first starts.
	tune func(c *node.Config)
}

// nodesToken is the control API token of the nodes network, which listens on loopback only.
const nodesToken = "vigil-sim"

// running is one node of the nodes network, with what it takes to restart it.
type running struct {
	cfg    node.Config
	link   string // its simulated region: its region, or its own ID for a checker
	node   *node.Node
	cancel context.CancelFunc
	done   chan error

	// src is a checker's own loopback source address for its probes, so that its sockets
	// can be told apart from other nodes'.
	src  netip.Addr
	down bool        // stopped by a kill step until a start step (guarded by nodesNetwork.mu)
	held []io.Closer // a killed location's DNS sockets, held until it starts (chaosnet.go)
}

// nodesNetwork is three regions of agent runtimes (package node) on the regions simulated
// network: per region one location and three checkers, each checker on a simulated link of
// its own (named by its ID, linked to every region) so that it alone can lose its network.
// With a control plane, one voter (real raft, BoltDB, the control API over loopback) feeds
// every node's Watcher, and every node keeps the disk copy it restarts from; without, the
// nodes run the document statically.
type nodesNetwork struct {
	ctx      context.Context
	log      *slog.Logger
	sim      *regions.Network
	targets  map[string]*dev.Target
	regions  []string
	checkers []string
	spec     nodeSpec // what every data-plane node is made of, for nodes added later
	heapBase uint64   // the heap after GC before the first node started
	srcs     int      // the checkers' source addresses handed out

	mu     sync.Mutex
	voter  *running
	voters []*running // a control plane of several voters (chaosnet.go)
	nodes  []*running // locations first, in region order, then checkers
	errs   []error
	wg     sync.WaitGroup
	stop   context.CancelFunc
}

// startNodes starts the targets of cfg, voterCount voters (none: the nodes run doc), and the nodes; they stop
// when ctx ends or wait is called.
func startNodes(ctx context.Context, cfg dev.Config, doc *config.Document, dir string, log *slog.Logger, voterCount int, opts nodesOptions) (n *nodesNetwork, err error) {
	ctx, stop := context.WithCancel(ctx)
	n = &nodesNetwork{ctx: ctx, log: log, targets: map[string]*dev.Target{}, regions: cfg.Regions, stop: stop}
	defer func() {
		if err != nil {
			_ = n.wait()
		}
	}()
	simRegions := slices.Clone(cfg.Regions)
	for _, r := range cfg.Regions {
		for i := range cmp.Or(opts.checkers, checkersPerRegion) {
			id := fmt.Sprintf("%s-checker-%d", r, i+1)
			n.checkers = append(n.checkers, id)
			simRegions = append(simRegions, id)
		}
	}
	if n.sim, err = regions.NewNetwork(cfg.Seed, simRegions...); err != nil {
		return n, fmt.Errorf("sim: %w", err)
	}
	canaries, err := n.startTargets(ctx, cfg)
	if err != nil {
		return n, err
	}
	var voters []string
	if voterCount == 1 {
		api, err := n.startVoter(filepath.Join(dir, "voter"), doc)
		if err != nil {
			return n, err
		}
		voters = []string{api}
	} else if voterCount > 1 {
		if voters, err = n.startVoters(dir, doc, voterCount); err != nil {
			return n, err
		}
	}
	key, err := gossip.ParseKey(dev.DemoKey)
	if err != nil {
		return n, fmt.Errorf("sim: %w", err)
	}
	n.spec = nodeSpec{doc: doc, dir: dir, voters: voters, key: key, canaries: canaries}
	n.heapBase = heapAfterGC()
	return n, n.startDataPlane(opts.tune)
}

// startTargets starts every region's target of cfg and its canary, a target that always
// answers: a checker that loses its own network fails its region's canary and withdraws
// instead of reporting every check unhealthy. It returns the canaries' checks by region.
func (n *nodesNetwork) startTargets(ctx context.Context, cfg dev.Config) (map[string]config.Check, error) {
	for _, r := range cfg.Regions {
		t, err := dev.NewTarget(r, cfg.Targets[r])
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		n.targets[r] = t
		n.wg.Go(func() { _ = t.Run(ctx) })
		if err := n.sim.PlaceTarget(t.Addr(), r); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
	}
	canaries := map[string]config.Check{}
	for _, r := range cfg.Regions {
		c, err := n.startCanary(ctx, r)
		if err != nil {
			return nil, err
		}
		canaries[r] = c
	}
	return canaries, nil
}

// startDataPlane starts every region's location, then every checker, each joining the pool
// through the first; tune, when set, adjusts each node's configuration first.
func (n *nodesNetwork) startDataPlane(tune func(c *node.Config)) error {
	var seed string
	add := func(id, region, link string, roles node.Roles) error {
		rn := &running{cfg: n.nodeConfig(id, region, roles, seed), link: link}
		if roles&node.RoleChecker != 0 {
			rn.src = n.sourceAddr()
		}
		if tune != nil {
			tune(&rn.cfg)
		}
		if err := n.run(rn); err != nil {
			return err
		}
		// A restart keeps the DNS port, as a restarted process would.
		rn.cfg.DNSAddr = rn.node.DNSAddr()
		n.nodes = append(n.nodes, rn)
		if seed == "" {
			seed = rn.node.GossipAddr()
		}
		return nil
	}
	for _, r := range n.regions {
		if err := add(r+"-location", r, r, node.RoleLocation); err != nil {
			return err
		}
	}
	for _, id := range n.checkers {
		r, _, _ := strings.Cut(id, "-checker-")
		if err := add(id, r, id, node.RoleChecker); err != nil {
			return err
		}
	}
	return nil
}

// nodeSpec is what every data-plane node of the network is made of.
type nodeSpec struct {
	doc      *config.Document
	dir      string
	voters   []string // the control API, or none: the document is static
	key      []byte
	canaries map[string]config.Check
}

// nodeConfig is the configuration of one data-plane node that joins the pool through join
// (none: it is the first).
func (n *nodesNetwork) nodeConfig(id, region string, roles node.Roles, join string) node.Config {
	c := node.DefaultConfig()
	c.ID, c.Region, c.Roles, c.DataDir = id, region, roles, filepath.Join(n.spec.dir, id)
	if len(n.spec.voters) > 0 {
		c.Voters, c.Token = n.spec.voters, nodesToken
	} else {
		c.Static = n.spec.doc
	}
	c.Gossip.Keys, c.Gossip.Profile = [][]byte{n.spec.key}, gossip.ProfileLocal
	c.Gossip.HeartbeatInterval, c.Gossip.RejoinInterval = 500*time.Millisecond, time.Second
	if join != "" {
		c.Gossip.Join = []string{join}
	}
	c.DNSAddr, c.HTTPAddr, c.EvalInterval = "127.0.0.1:0", "off", 100*time.Millisecond
	c.Probe.AllowLoopback = true
	if roles&node.RoleChecker != 0 {
		c.Probe.Canaries = []config.Check{n.spec.canaries[region]}
	}
	c.Logger = n.log.With("node", id)
	return c
}

// startCanary starts region r's canary target and returns the TCP check that probes it.
func (n *nodesNetwork) startCanary(ctx context.Context, r string) (config.Check, error) {
	c := config.DefaultCheck()
	t, err := dev.NewTarget("canary-"+r, "127.0.0.1:0")
	if err != nil {
		return c, fmt.Errorf("sim: canary: %w", err)
	}
	n.wg.Go(func() { _ = t.Run(ctx) })
	if err := n.sim.PlaceTarget(t.Addr(), r); err != nil {
		return c, fmt.Errorf("sim: canary: %w", err)
	}
	ap, err := netip.ParseAddrPort(t.Addr())
	if err != nil {
		return c, fmt.Errorf("sim: canary: %w", err)
	}
	c.ID, c.Protocol = "canary-"+r, config.ProtocolTCP
	c.Target = config.Target{Host: ap.Addr().String(), Port: int(ap.Port())}
	c.Interval, c.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
	return c, nil
}

// run creates rn's node on a fresh transport of its link and runs it until it is stopped.
func (n *nodesNetwork) run(rn *running) error {
	if rn.link != "" {
		tr, err := n.sim.NewTransport(rn.link)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		dialer, err := n.sim.Dialer(rn.link)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if rn.src.IsValid() {
			dialer.Dialer.LocalAddr = &net.TCPAddr{IP: rn.src.AsSlice()}
		}
		rn.cfg.Transport, rn.cfg.Dialer = tr, dialer
	}
	rn.cfg.Registerer = prometheus.NewRegistry()
	// Every goroutine the node starts, memberlist's included, carries its labels, so that
	// the goroutine profile tells the nodes apart.
	labels := nodeLabels(rn.cfg)
	var nd *node.Node
	var err error
	pprof.Do(n.ctx, labels, func(context.Context) {
		nd, err = node.New(rn.cfg) // binds every socket; Run releases them
	})
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	ctx, cancel := context.WithCancel(n.ctx)
	rn.node, rn.cancel, rn.done = nd, cancel, make(chan error, 1)
	n.wg.Go(func() {
		var err error
		pprof.Do(ctx, labels, func(ctx context.Context) { err = nd.Run(ctx) })
		if err != nil && n.ctx.Err() == nil {
			n.mu.Lock()
			n.errs = append(n.errs, fmt.Errorf("node %s: %w", rn.cfg.ID, err))
			n.mu.Unlock()
		}
		rn.done <- err
	})
	return nil
}

// halt stops rn's node and waits until it has stopped (at most 20s).
func (n *nodesNetwork) halt(rn *running) error {
	rn.cancel()
	select {
	case <-rn.done:
		return nil
	case <-time.After(20 * time.Second):
		return fmt.Errorf("node %s did not stop within 20s", rn.cfg.ID)
	}
}

// startVoter starts the one control voter and applies doc through its API.
func (n *nodesNetwork) startVoter(dir string, doc *config.Document) (string, error) {
	raftAddr, err := freePort()
	if err != nil {
		return "", err
	}
	c := node.DefaultConfig()
	c.ID, c.Roles, c.DataDir, c.HTTPAddr = "voter", node.RoleControl, dir, "off"
	c.Control.RaftAddr, c.Control.APIAddr = fmt.Sprintf("127.0.0.1:%d", raftAddr), "127.0.0.1:0"
	c.Control.Bootstrap, c.Control.WriteTokens = true, []string{nodesToken}
	c.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond,
		LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	c.Control.RaftLogLevel = slog.LevelWarn
	c.Logger = n.log.With("node", "voter")
	rn := &running{cfg: c}
	if err := n.run(rn); err != nil {
		return "", err
	}
	n.voter = rn
	api := rn.node.Self().ControlAPI
	body, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("sim: document: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := putDocument(n.ctx, api, body)
		if err == nil {
			return api, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("sim: the voter took no document within 30s: %w", err)
		}
		select {
		case <-n.ctx.Done():
			return "", fmt.Errorf("sim: %w", n.ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// putDocument writes the document through the control API of the voter at api, as `vigil
// apply` does, within 10s.
func putDocument(ctx context.Context, api string, body []byte) error {
	c, err := voterClient(api)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = c.PutDocument(ctx, body, client.ContentJSON)
	return err
}

// voterClient returns a client of the control API of the one voter at api, with the
// network's write token: its calls ask that voter and no other.
func voterClient(api string) (*client.Client, error) {
	return client.New(client.Config{Voters: []string{api}, Token: nodesToken})
}

// wait stops every node and target and waits until they have.
func (n *nodesNetwork) wait() error {
	n.stop()
	n.wg.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.releaseHeld()
	return errors.Join(n.errs...)
}

// StopControl stops the voter for good.
func (n *nodesNetwork) StopControl() error {
	n.mu.Lock()
	v := n.voter
	n.voter = nil
	n.mu.Unlock()
	if v == nil {
		return n.stopVoters()
	}
	return n.halt(v)
}

// Restart stops and restarts every data-plane node, one at a time, from its data directory;
// each rejoins the pool through a node that is running.
func (n *nodesNetwork) Restart() error {
	for i, rn := range n.nodes {
		if err := n.halt(rn); err != nil {
			return err
		}
		seed := n.nodes[(i+1)%len(n.nodes)].node.GossipAddr()
		rn.cfg.Gossip.Join = []string{seed}
		n.mu.Lock()
		err := n.run(rn)
		n.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// location returns the running node of region's location.
func (n *nodesNetwork) location(region string) *node.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, rn := range n.nodes {
		if rn.cfg.ID == region+"-location" && !rn.down {
			return rn.node
		}
	}
	return nil
}

// SetTargetDown makes region's target fail its health check, or pass it.
func (n *nodesNetwork) SetTargetDown(region string, down bool) error {
	t, ok := n.targets[region]
	if !ok {
		return fmt.Errorf("no target in region %q", region)
	}
	t.SetDown(down)
	return nil
}

// Cut cuts one region from every other, or two regions apart: a region is its location's
// link and the links of its checkers.
func (n *nodesNetwork) Cut(rs ...string) error { return n.cutRegions(rs...) }

// Heal restores every link.
func (n *nodesNetwork) Heal() { n.sim.HealAll() }

// SetOffline cuts every link of one checker (gossip and probes), or restores them.
func (n *nodesNetwork) SetOffline(checker string, offline bool) error {
	if !slices.Contains(n.checkers, checker) {
		return fmt.Errorf("no checker %q (checkers: %s)", checker, strings.Join(n.checkers, ", "))
	}
	if offline {
		return n.sim.Isolate(checker)
	}
	for _, r := range n.sim.Regions() {
		if r != checker {
			if err := n.sim.Heal(checker, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Verdicts returns the location's verdicts; none while it has no configuration.
func (n *nodesNetwork) Verdicts(location string) map[string]verdictView {
	l := n.location(location)
	if l == nil {
		return nil
	}
	vs, err := l.Verdicts()
	if err != nil {
		return nil
	}
	out := make(map[string]verdictView, len(vs))
	for id, v := range vs {
		out[id] = view(v)
	}
	return out
}

// DNSAddr returns the location's DNS address, which a restart keeps.
func (n *nodesNetwork) DNSAddr(location string) string {
	if l := n.location(location); l != nil {
		return l.DNSAddr()
	}
	return ""
}
