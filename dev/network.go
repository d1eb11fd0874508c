package dev

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/httpguard"
	"github.com/vigil-dns/vigil/node"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/regions"
	"github.com/vigil-dns/vigil/status"
	"github.com/vigil-dns/vigil/verify"
)

// controlID is the raft ID (and raft address) of the dev network's one voter: it has no
// peer, so its raft transport is in memory, and a fixed address lets it restart from
// --data-dir.
const controlID = "dev-control"

// Network is a running dev network. Start it with Start; it stops when the context given to
// Start ends, and Wait returns once everything has stopped.
type Network struct {
	cfg       Config
	log       *slog.Logger
	sim       *regions.Network
	voter     *control.Node
	targets   map[string]*Target
	locations map[string]*node.Node
	checkers  []*node.Node
	control   string // the control API's address
	// statusURLs are the locations' status APIs by node id, for the network view (under mu).
	statusURLs map[string]string
	// verifyLocs are the locations the verifiers ask (under mu); verifiers are each region's
	// first checker's, by region.
	verifyLocs []verify.Location
	verifiers  map[string]*verify.Verifier
	// recv keeps what the dev receivers took (notify.go).
	recv receivers

	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// Start starts a dev network and returns once the configuration is applied and every node
// runs; the network stops when ctx ends. On error, whatever started is stopped.
func Start(ctx context.Context, cfg Config) (n *Network, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	n = &Network{cfg: cfg, log: cfg.Logger, targets: map[string]*Target{}, locations: map[string]*node.Node{},
		verifiers: map[string]*verify.Verifier{}}
	defer func() {
		if err != nil {
			cancel()
			_ = n.Wait()
		}
	}()
	n.wg.Go(func() { <-ctx.Done() }) // Wait returns after cancel even if nothing else started
	if n.sim, err = regions.NewNetwork(cfg.Seed, cfg.Regions...); err != nil {
		return n, fmt.Errorf("dev: %w", err)
	}
	for _, r := range cfg.Regions {
		t, err := NewTarget(r, cfg.Targets[r])
		if err != nil {
			return n, err
		}
		n.targets[r] = t
		n.goRun(ctx, "target "+r, t.Run)
		if err := n.sim.PlaceTarget(t.Addr(), r); err != nil {
			return n, fmt.Errorf("dev: %w", err)
		}
	}
	if err := n.startControl(ctx); err != nil {
		return n, err
	}
	key, err := gossip.ParseKey(DemoKey)
	if err != nil {
		return n, fmt.Errorf("dev: %w", err)
	}
	var seed string
	for _, r := range cfg.Regions {
		if seed, err = n.startRegion(ctx, r, key, seed); err != nil {
			return n, err
		}
	}
	if err := n.startNotify(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// goRun runs f in a goroutine of the network, keeping its error.
func (n *Network) goRun(ctx context.Context, what string, f func(context.Context) error) {
	n.wg.Go(func() {
		if err := f(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("dev: stopped", "what", what, "err", err)
			n.mu.Lock()
			n.errs = append(n.errs, fmt.Errorf("%s: %w", what, err))
			n.mu.Unlock()
		}
	})
}

// Wait waits until everything has stopped and returns the errors of what stopped early.
func (n *Network) Wait() error {
	n.wg.Wait()
	if n.voter != nil {
		if err := n.voter.Close(); err != nil {
			n.errs = append(n.errs, err)
		}
		n.voter = nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return errors.Join(n.errs...)
}

// startControl starts the voter, its API with the dev endpoints, and applies the document.
func (n *Network) startControl(ctx context.Context) error {
	reg := prometheus.NewRegistry()
	ln, err := net.Listen("tcp", n.cfg.ControlAddr)
	if err != nil {
		return fmt.Errorf("dev: control API: %w", err)
	}
	n.control = ln.Addr().String()
	_, trans := raft.NewInmemTransport(raft.ServerAddress(controlID))
	// Signed zones' keys are sealed with the pool's key, the locations' default secret.
	secret, err := gossip.ParseKey(DemoKey)
	if err != nil {
		ln.Close()
		return fmt.Errorf("dev: %w", err)
	}
	voter, err := control.NewNode(control.NodeConfig{
		ID: controlID, DataDir: filepath.Join(n.cfg.DataDir, "control"), Transport: trans,
		APIURL: "http://" + n.control, Logger: n.log, RaftLogLevel: slog.LevelWarn,
		Registerer:   prometheus.WrapRegistererWith(prometheus.Labels{"node": controlID}, reg),
		DNSSECSecret: secret,
	})
	if err != nil {
		ln.Close()
		return err
	}
	n.voter = voter
	api, err := control.NewAPI(control.APIConfig{
		Node: voter, WriteTokens: []string{DemoToken}, OpenReads: true, Logger: n.log,
		Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"node": controlID}, reg),
	})
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/v1/dev/", n.faultsHandler())
	recv := n.receiverHandler()
	mux.Handle("/v1/dev/receiver/", recv)
	mux.Handle("GET /v1/dev/notifications", recv)
	mux.Handle("/", api)
	n.serveHTTP(ctx, "control API", ln, mux)
	if !voter.HasExistingState() {
		if err := voter.Bootstrap(); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !voter.IsLeader() {
		if time.Now().After(deadline) {
			return errors.New("dev: control: no leader within 30s")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dev: control: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	doc := withDevNotifications(n.cfg.Document, n.ControlURL())
	if _, err := voter.Apply(&control.Command{Op: control.OpApplyDocument, Document: doc}); err != nil {
		return fmt.Errorf("dev: apply the document: %w", err)
	}
	return nil
}

// serveHTTP serves h on ln until ctx ends.
func (n *Network) serveHTTP(ctx context.Context, what string, ln net.Listener, h http.Handler) {
	srv := httpguard.Server(h, httpguard.Limits{IdleTimeout: time.Minute})
	n.goRun(ctx, what, func(ctx context.Context) error {
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			<-errc
			return nil
		case err := <-errc:
			return err
		}
	})
}

// startRegion starts the location and the checkers of region r, each a node.Node over the
// simulated network that follows the control plane, joining the pool through seed (none for
// the first region); it returns the seed for the next regions. The location serves the
// status API and page on its HTTP address, and /metrics there covers the region's nodes.
func (n *Network) startRegion(ctx context.Context, r string, key []byte, seed string) (string, error) {
	reg := prometheus.NewRegistry()
	loc, err := n.newNode(r, r+"-location", node.RoleLocation, key, seed, reg, func(c *node.Config) {
		c.DNSAddr, c.HTTPAddr = n.cfg.Locations[r].DNS, n.cfg.Locations[r].HTTP
	})
	if err != nil {
		return seed, err
	}
	// Every node runs on loopback with ports of its own: a location finds another's status
	// API by its id, not at its gossip host.
	if err := loc.MountStatus(func(o *status.Options) { o.Network.PeerURL = n.statusURL }); err != nil {
		loc.Close()
		return seed, fmt.Errorf("dev: location %s: %w", r, err)
	}
	n.mu.Lock()
	if n.statusURLs == nil {
		n.statusURLs = map[string]string{}
	}
	n.statusURLs[loc.Self().ID] = "http://" + loc.HTTPAddr()
	n.verifyLocs = append(n.verifyLocs, verify.Location{ID: loc.Self().ID, Status: "http://" + loc.HTTPAddr(), DNS: loc.DNSAddr()})
	n.mu.Unlock()
	n.locations[r] = loc
	n.goRun(ctx, "location "+r, loc.Run)
	if seed == "" {
		seed = loc.GossipAddr()
	}
	// The location's HTTP port is the region's canary: it always answers, so a checker that
	// still reaches it knows that failures elsewhere are not its own network's.
	canary, err := n.canary(r, loc.HTTPAddr())
	if err != nil {
		return seed, err
	}
	dialer, err := n.sim.Dialer(r)
	if err != nil {
		return seed, fmt.Errorf("dev: %w", err)
	}
	for i := range n.cfg.CheckersPerRegion {
		id := fmt.Sprintf("%s-checker-%d", r, i+1)
		httpAddr := "off"
		if addrs := n.cfg.CheckerHTTP[r]; i < len(addrs) {
			httpAddr = addrs[i]
		}
		chk, err := n.newNode(r, id, node.RoleChecker, key, seed, reg, func(c *node.Config) {
			c.Dialer, c.HTTPAddr = dialer, httpAddr
			c.Probe.AllowLoopback, c.Probe.Canaries = true, []config.Check{canary}
		})
		if err != nil {
			return seed, err
		}
		var v *verify.Verifier
		if i == 0 && n.cfg.VerifyInterval > 0 {
			if v, err = n.newVerifier(chk); err != nil {
				chk.Close()
				return seed, err
			}
			n.verifiers[r] = v
		}
		if httpAddr != "off" {
			err := chk.MountStatus(nil)
			if err == nil && v != nil {
				err = chk.Handle("GET /v1/verification", v)
			}
			if err != nil {
				chk.Close()
				return seed, fmt.Errorf("dev: checker %s: %w", id, err)
			}
		}
		if v != nil {
			n.goRun(ctx, "verifier "+id, v.Run)
		}
		n.checkers = append(n.checkers, chk)
		n.goRun(ctx, "checker "+id, chk.Run)
	}
	return seed, nil
}

// newNode creates one node of region r over the simulated network, following the control
// plane, its metrics in reg under the label node=id; edit sets what the role adds.
func (n *Network) newNode(r, id string, roles node.Roles, key []byte, seed string, reg *prometheus.Registry, edit func(*node.Config)) (*node.Node, error) {
	tr, err := n.sim.NewTransport(r)
	if err != nil {
		return nil, fmt.Errorf("dev: %w", err)
	}
	cfg := node.DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.Version = id, r, roles, "dev"
	cfg.DataDir = filepath.Join(n.cfg.DataDir, id)
	cfg.Voters, cfg.Transport, cfg.HTTPAddr = []string{n.ControlURL()}, tr, "off"
	cfg.Gossip = node.GossipConfig{Keys: [][]byte{key}, Profile: gossip.ProfileLocal,
		HeartbeatInterval: time.Second, RejoinInterval: 2 * time.Second}
	if seed != "" {
		cfg.Gossip.Join = []string{seed}
	}
	cfg.EvalInterval, cfg.Logger = n.cfg.Evaluate, n.log
	cfg.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"node": id}, reg)
	cfg.Gatherer = reg
	edit(&cfg)
	nd, err := node.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("dev: %s: %w", id, err)
	}
	return nd, nil
}

// newVerifier makes the answer verifier of checker chk: it asks every location of the
// network, from the configuration chk follows, and its metrics join chk's.
func (n *Network) newVerifier(chk *node.Node) (*verify.Verifier, error) {
	v, err := verify.New(verify.Options{
		Document: chk.Document,
		Version:  func() uint64 { return chk.ConfigInfo().Index },
		Locations: func() []verify.Location {
			n.mu.Lock()
			defer n.mu.Unlock()
			return slices.Clone(n.verifyLocs)
		},
		Interval: n.cfg.VerifyInterval, Settle: n.cfg.VerifySettle,
		Registerer: chk.Registerer(), Logger: n.log,
	})
	if err != nil {
		return nil, fmt.Errorf("dev: verifier of %s: %w", chk.Self().ID, err)
	}
	return v, nil
}

// Verification returns what region r's verifier found, and false when r has none.
func (n *Network) Verification(r string) (verify.Report, bool) {
	v, ok := n.verifiers[r]
	if !ok {
		return verify.Report{}, false
	}
	return v.Report(), true
}

// statusURL returns the status API of a location of the network, by its id.
func (n *Network) statusURL(m status.Member) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.statusURLs[m.ID]
}

// canary returns the canary check of region r's checkers: a TCP check of addr, placed in r.
func (n *Network) canary(r, addr string) (config.Check, error) {
	c := config.DefaultCheck()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return c, fmt.Errorf("dev: canary: %w", err)
	}
	c.ID = "canary-" + r
	c.Protocol = config.ProtocolTCP
	c.Target = config.Target{Host: ap.Addr().String(), Port: int(ap.Port())}
	c.Interval = config.Duration(time.Second)
	c.Timeout = config.Duration(500 * time.Millisecond)
	if err := n.sim.PlaceTarget(addr, r); err != nil {
		return c, fmt.Errorf("dev: canary: %w", err)
	}
	return c, nil
}

// ControlURL returns the base URL of the control API.
func (n *Network) ControlURL() string { return "http://" + n.control }

// DNSAddr returns the address of region r's location DNS listener.
func (n *Network) DNSAddr(r string) string {
	if l, ok := n.locations[r]; ok {
		return l.DNSAddr()
	}
	return ""
}

// HTTPAddr returns the address of region r's location HTTP server (the status API and page,
// /metrics, /healthz, /readyz).
func (n *Network) HTTPAddr(r string) string {
	if l, ok := n.locations[r]; ok {
		return l.HTTPAddr()
	}
	return ""
}

// TargetAddr returns the address of region r's demo target.
func (n *Network) TargetAddr(r string) string {
	if t, ok := n.targets[r]; ok {
		return t.Addr()
	}
	return ""
}

// Verdicts returns the current verdicts of region r's location, by check.
func (n *Network) Verdicts(r string) map[string]quorum.Explanation {
	if l, ok := n.locations[r]; ok {
		v, _ := l.Verdicts()
		return v
	}
	return nil
}
