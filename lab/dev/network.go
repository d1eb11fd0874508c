package dev

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/internal/httpguard"
	"github.com/vigil-dns/vigil/lab/cluster"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/status"
	"github.com/vigil-dns/vigil/status/verify"
)

// controlID is the raft ID (and raft address) of the dev network's one voter: it has no
// peer, so its raft transport is in memory, and a fixed address lets it restart from
// --data-dir.
const controlID = "dev-control"

// digestAge is how long a location's network view and digest are served again in the dev
// network (2s by default elsewhere): its notification runner reads the digests every 500ms.
const digestAge = 250 * time.Millisecond

// Network is a running dev network. Start it with Start; it stops when the context given to
// Start ends, and Wait returns once everything has stopped.
type Network struct {
	cfg     Config
	log     *slog.Logger
	ctx     context.Context  // ends when the network stops
	cluster *cluster.Cluster // the targets, checkers and locations
	voter   *control.Server
	control string // the control API's address
	// controlReg is the control plane's metrics registry, served on the control API's
	// /metrics: the voter's, its API's and the notification runner's.
	controlReg *prometheus.Registry
	// regs are the regions' metrics registries, each served by the region's location.
	regs map[string]*prometheus.Registry
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
// runs; the network stops when ctx ends. On error, whatever started is stopped; an address
// already taken is an *AddrInUseError.
func Start(ctx context.Context, cfg Config) (n *Network, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	n = &Network{cfg: cfg, log: cfg.Logger, ctx: ctx, regs: map[string]*prometheus.Registry{}, verifiers: map[string]*verify.Verifier{}}
	defer func() {
		if err != nil {
			cancel()
			_ = n.Wait()
			err = cfg.inUse(err)
		}
	}()
	n.wg.Go(func() { <-ctx.Done() }) // Wait returns after cancel even if nothing else started
	key, err := gossip.ParseKey(DemoKey)
	if err != nil {
		return n, fmt.Errorf("dev: %w", err)
	}
	// The targets listen first: their addresses are in the document the control plane applies
	// (a port chosen free before Start is taken the sooner, the fewer others can take it).
	targets, err := cluster.NewTargets(cfg.Targets)
	if err != nil {
		return n, fmt.Errorf("dev: %w", err)
	}
	if err := n.startControl(ctx); err != nil {
		for _, t := range targets {
			t.Close()
		}
		return n, err
	}
	// The location's HTTP port is its region's canary: it always answers, so a checker that
	// still reaches it knows that failures elsewhere are not its own network's.
	n.cluster, err = cluster.Start(ctx, cluster.Options{
		Regions: cfg.Regions, Seed: cfg.Seed, DataDir: cfg.DataDir, Logger: n.log,
		ControlAPIs: []string{n.ControlURL()}, Key: key, Targets: targets,
		Checkers: cfg.CheckersPerRegion, Canary: cluster.CanaryLocation,
		Node: n.nodeConfig, Mount: n.mount,
	})
	if err != nil {
		return n, fmt.Errorf("dev: %w", err)
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
	if n.cluster != nil {
		if err := n.cluster.Wait(); err != nil {
			n.errs = append(n.errs, err)
		}
	}
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
	n.controlReg = reg
	ln, err := net.Listen("tcp", n.cfg.ControlAddr)
	if err != nil {
		return fmt.Errorf("dev: control API: %w", err)
	}
	n.control = ln.Addr().String()
	_, trans := raft.NewInmemTransport(raft.ServerAddress(controlID))
	// Signed zones' keys are sealed with the demo's DNSSEC secret, which the locations hold
	// too (nodeConfig) and the checkers do not.
	secret, err := gossip.ParseKey(DemoDNSSECSecret)
	if err != nil {
		ln.Close()
		return fmt.Errorf("dev: %w", err)
	}
	voter, err := control.NewServer(control.ServerConfig{
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
	if _, err := voter.Apply(&state.Command{Op: state.OpApplyDocument, Document: doc}); err != nil {
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

// nodeConfig sets what a node of the dev network adds to the cluster's: its metrics in its
// region's registry under the label node=id, a location's addresses, a checker's HTTP
// server (none unless Config.CheckerHTTP lists one).
func (n *Network) nodeConfig(c *agent.Config) {
	c.Version, c.Logger = "dev", n.log
	c.Gossip.HeartbeatInterval, c.Gossip.RejoinInterval = time.Second, 2*time.Second
	c.EvalInterval = n.cfg.Evaluate
	reg, ok := n.regs[c.Region]
	if !ok {
		reg = prometheus.NewRegistry()
		n.regs[c.Region] = reg
	}
	c.Registerer, c.Gatherer = prometheus.WrapRegistererWith(prometheus.Labels{"node": c.ID}, reg), reg
	if c.Roles.Has(agent.RoleLocation) {
		c.DNSAddr, c.HTTPAddr = n.cfg.Locations[c.Region].DNS, n.cfg.Locations[c.Region].HTTP
		c.DNSSECSecret, _ = gossip.ParseKey(DemoDNSSECSecret)
		return
	}
	if i := checkerIndex(c.ID); i < len(n.cfg.CheckerHTTP[c.Region]) {
		c.HTTPAddr = n.cfg.CheckerHTTP[c.Region][i]
	}
}

// checkerIndex returns the index (from 0) of a checker in its region, from its id
// <region>-checker-<N>.
func checkerIndex(id string) int {
	_, num, _ := strings.Cut(id, "-checker-")
	i, err := strconv.Atoi(num)
	if err != nil {
		return -1
	}
	return i - 1
}

// mount mounts the status API on a node's HTTP server: a location's, which finds another's
// by its id, and a checker's when it serves HTTP, with its region's verifier on its first.
func (n *Network) mount(c agent.Config, nd *agent.Node) error {
	if c.Roles.Has(agent.RoleLocation) {
		// Every node runs on loopback with ports of its own: a location finds another's
		// status API by its id, not at its gossip host.
		// Its digest, which the notification rules read, is at most digestAge old: a short
		// outage (a target down and up again at once) is seen and notified.
		if err := nd.MountStatus(func(o *status.Options) {
			o.Network.PeerURL, o.Network.CacheFor = n.statusURL, digestAge
		}); err != nil {
			return fmt.Errorf("dev: location %s: %w", c.Region, err)
		}
		n.mu.Lock()
		if n.statusURLs == nil {
			n.statusURLs = map[string]string{}
		}
		n.statusURLs[c.ID] = "http://" + nd.HTTPAddr()
		n.verifyLocs = append(n.verifyLocs, verify.Location{ID: c.ID, Status: "http://" + nd.HTTPAddr(), DNS: nd.DNSAddr()})
		n.mu.Unlock()
		return nil
	}
	var v *verify.Verifier
	if checkerIndex(c.ID) == 0 && n.cfg.VerifyInterval > 0 {
		var err error
		if v, err = n.newVerifier(nd); err != nil {
			return err
		}
		n.verifiers[c.Region] = v
	}
	if c.HTTPAddr != "off" {
		err := nd.MountStatus(nil)
		if err == nil && v != nil {
			err = nd.Handle("GET /v1/verification", v)
		}
		if err != nil {
			return fmt.Errorf("dev: checker %s: %w", c.ID, err)
		}
	}
	if v != nil {
		n.goRun(n.ctx, "verifier "+c.ID, v.Run)
	}
	return nil
}

// newVerifier makes the answer verifier of checker chk: it asks every location of the
// network, from the configuration chk follows, and its metrics join chk's.
func (n *Network) newVerifier(chk *agent.Node) (*verify.Verifier, error) {
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

// ControlURL returns the base URL of the control API.
func (n *Network) ControlURL() string { return "http://" + n.control }

// DNSAddr returns the address of region r's location DNS listener.
func (n *Network) DNSAddr(r string) string { return n.cluster.DNSAddr(r) }

// HTTPAddr returns the address of region r's location HTTP server (the status API and page,
// /metrics, /healthz, /readyz).
func (n *Network) HTTPAddr(r string) string { return n.cluster.HTTPAddr(r) }

// TargetAddr returns the address of region r's demo target.
func (n *Network) TargetAddr(r string) string {
	if t := n.cluster.Target(r); t != nil {
		return t.Addr()
	}
	return ""
}

// Verdicts returns the current verdicts of region r's location, by check.
func (n *Network) Verdicts(r string) map[string]quorum.Explanation {
	if l := n.cluster.Location(r); l != nil {
		v, _ := l.Verdicts()
		return v
	}
	return nil
}
