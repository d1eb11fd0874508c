package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dev"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/node"
	"github.com/vigil-dns/vigil/regions"
)

// checkersPerRegion is the number of checkers per region of the nodes network.
const checkersPerRegion = 3

// nodesNetwork is three regions of agent runtimes (package node) on the regions simulated
// network: per region one location and three checkers, each checker on a simulated link of
// its own (named by its ID, linked to every region) so that it alone can lose its network.
// Every node runs the document statically: there is no control plane.
type nodesNetwork struct {
	sim       *regions.Network
	targets   map[string]*dev.Target
	locations map[string]*node.Node
	checkers  []string

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// startNodes starts the targets of cfg and the nodes; they stop when ctx ends.
func startNodes(ctx context.Context, cfg dev.Config, doc *config.Document, dir string, log *slog.Logger) (n *nodesNetwork, err error) {
	ctx, cancel := context.WithCancel(ctx)
	n = &nodesNetwork{targets: map[string]*dev.Target{}, locations: map[string]*node.Node{}, cancel: cancel}
	defer func() {
		if err != nil {
			_ = n.wait()
		}
	}()
	simRegions := slices.Clone(cfg.Regions)
	for _, r := range cfg.Regions {
		for i := range checkersPerRegion {
			id := fmt.Sprintf("%s-checker-%d", r, i+1)
			n.checkers = append(n.checkers, id)
			simRegions = append(simRegions, id)
		}
	}
	if n.sim, err = regions.NewNetwork(cfg.Seed, simRegions...); err != nil {
		return n, fmt.Errorf("sim: %w", err)
	}
	for _, r := range cfg.Regions {
		t, err := dev.NewTarget(r, cfg.Targets[r])
		if err != nil {
			return n, fmt.Errorf("sim: %w", err)
		}
		n.targets[r] = t
		n.goRun(ctx, "target "+r, t.Run)
		if err := n.sim.PlaceTarget(t.Addr(), r); err != nil {
			return n, fmt.Errorf("sim: %w", err)
		}
	}
	key, err := gossip.ParseKey(dev.DemoKey)
	if err != nil {
		return n, fmt.Errorf("sim: %w", err)
	}
	var seed string
	add := func(id, region, link string, roles node.Roles) (*node.Node, error) {
		tr, err := n.sim.NewTransport(link)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		dialer, err := n.sim.Dialer(link)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		c := node.DefaultConfig()
		c.ID, c.Region, c.Roles, c.DataDir = id, region, roles, filepath.Join(dir, id)
		c.Transport, c.Dialer, c.Static = tr, dialer, doc
		c.Gossip.Keys, c.Gossip.Profile = [][]byte{key}, gossip.ProfileLocal
		c.Gossip.HeartbeatInterval, c.Gossip.RejoinInterval = 500*time.Millisecond, time.Second
		if seed != "" {
			c.Gossip.Join = []string{seed}
		}
		c.DNSAddr, c.HTTPAddr, c.EvalInterval = "127.0.0.1:0", "off", 100*time.Millisecond
		c.Probe.AllowLoopback = true
		c.Logger, c.Registerer = log.With("node", id), prometheus.NewRegistry()
		nd, err := node.New(c) // binds every socket; Run releases them
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		n.goRun(ctx, "node "+id, nd.Run)
		if seed == "" {
			seed = nd.GossipAddr()
		}
		return nd, nil
	}
	for _, r := range cfg.Regions {
		loc, err := add(r+"-location", r, r, node.RoleLocation)
		if err != nil {
			return n, err
		}
		n.locations[r] = loc
		for _, id := range n.checkers {
			if strings.HasPrefix(id, r+"-checker-") {
				if _, err := add(id, r, id, node.RoleChecker); err != nil {
					return n, err
				}
			}
		}
	}
	return n, nil
}

// goRun runs f until ctx ends, keeping its error.
func (n *nodesNetwork) goRun(ctx context.Context, what string, f func(context.Context) error) {
	n.wg.Go(func() {
		if err := f(ctx); err != nil && ctx.Err() == nil {
			n.mu.Lock()
			n.errs = append(n.errs, fmt.Errorf("%s: %w", what, err))
			n.mu.Unlock()
		}
	})
}

// wait stops every node and target and waits until they have.
func (n *nodesNetwork) wait() error {
	n.cancel()
	n.wg.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	return errors.Join(n.errs...)
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

// Cut is not offered: regions' links here are per checker; use the dev network.
func (n *nodesNetwork) Cut(...string) error {
	return errors.New("the nodes network does not cut regions: run this script on the dev network")
}

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
	l, ok := n.locations[location]
	if !ok {
		return nil
	}
	vs, err := l.Verdicts()
	if err != nil {
		return nil
	}
	out := make(map[string]verdictView, len(vs))
	for id, v := range vs {
		out[id] = verdictView{State: v.State, Serving: v.ServedAsHealthy, Sentence: v.Sentence, Fresh: v.Counts.Fresh, Unhealthy: v.Counts.Unhealthy}
	}
	return out
}

// DNSAddr returns the location's DNS address.
func (n *nodesNetwork) DNSAddr(location string) string {
	if l, ok := n.locations[location]; ok {
		return l.DNSAddr()
	}
	return ""
}
