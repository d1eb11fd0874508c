package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/tlsconf"
	"github.com/vigil-dns/vigil/regions"
)

// DefaultCheckers is the checkers per region of the default layout.
const DefaultCheckers = 3

// Canary says where a region's checkers find their canary: a target that always answers, so
// that a checker that loses its own network fails its canary and withdraws instead of
// reporting every check unhealthy.
type Canary int

const (
	// NoCanary: the checkers have no canary.
	NoCanary Canary = iota
	// CanaryTarget: every region runs a canary target of its own.
	CanaryTarget
	// CanaryLocation: the region's first location's HTTP server is the canary (the location
	// must serve HTTP).
	CanaryLocation
)

// Options shape a cluster. Regions, DataDir and (for a cluster with nodes) Key are required;
// the zero value of any other field is its default, listed with the field.
type Options struct {
	// Regions are the cluster's regions, in order.
	Regions []string
	// Seed seeds the simulated network's packet loss.
	Seed uint64
	// DataDir holds every node's data directory, DataDir/ID.
	DataDir string
	// Logger receives the nodes' logs, each with the attribute node=ID; nil discards them.
	Logger *slog.Logger

	// Document is what the cluster serves: written through the voters' API when the cluster
	// starts voters, run by every node statically when it has none and follows no
	// ControlAPIs.
	Document *config.Document
	// Voters is the number of control voters to start: agent runtimes with the control role,
	// raft over loopback. The first bootstraps the control plane, the others join it, and
	// the document goes in once every voter is a member.
	Voters int
	// ControlAPIs are the APIs of a control plane started elsewhere, which the nodes follow
	// (with no Voters).
	ControlAPIs []string
	// Token is the control API's write token; the nodes read with it.
	Token string
	// Key is the gossip pool's encryption key.
	Key []byte

	// Targets are the regions' demo targets, by region: the cluster places each in its
	// region and runs it until it stops (or closes it, when it fails to start);
	// SetTargetDown switches it.
	Targets map[string]*Target
	// Layout is the roles of every region's nodes, in order; default one location and
	// Checkers checkers. A location is named <region>-location, a checker
	// <region>-checker-<N>, a node with both roles <region>-node-<N> (N from 1).
	Layout []agent.Roles
	// Checkers is the number of checkers per region of the default layout; default
	// DefaultCheckers.
	Checkers int
	// CheckerLinks puts every checker on a simulated link of its own, named by its ID and
	// linked to every region, so that SetOffline can take it alone off the network; without,
	// a checker is on its region's link.
	CheckerLinks bool
	// SourceAddrs gives every checker a loopback source address of its own for its probes
	// (127.0.1.1, 127.0.1.2, ...), so that its sockets can be told apart from other nodes'.
	SourceAddrs bool
	// Canary says where the checkers' canaries are; default none.
	Canary Canary

	// Node, when set, adjusts each data-plane node's configuration before it first starts.
	Node func(c *agent.Config)
	// Voter, when set, adjusts each voter's configuration before it first starts.
	Voter func(c *agent.Config)
	// Mount, when set, is called with every node and its configuration once the node is
	// created and before it runs, at every start: to mount handlers on its HTTP server. An
	// error stops the start.
	Mount func(cfg agent.Config, n *agent.Node) error
	// BeforeNodes, when set, is called once the targets and voters run, before the first
	// data-plane node starts.
	BeforeNodes func()
}

// spec is one data-plane node of the layout.
type spec struct {
	id, region string
	roles      agent.Roles
}

// Cluster is a running cluster. Start it with Start; it stops when the context given to Start
// ends (or Stop), and Wait returns once everything has stopped.
type Cluster struct {
	o        Options
	ctx      context.Context
	cancel   context.CancelFunc
	log      *slog.Logger
	sim      *regions.Network
	specs    []spec
	canaries map[string]config.Check
	apis     []string // the control APIs the nodes follow
	// raftSecret is the cluster secret the voters' raft authenticates with (unless the
	// Voter hook gives them certificates).
	raftSecret []byte

	mu       sync.Mutex
	voters   []*Member
	nodes    []*Member // locations first, in region order, then the others
	checkers []string  // the checkers with a link of their own
	srcs     int       // the source addresses handed out
	errs     []error
	wg       sync.WaitGroup
}

// Start starts the targets, the voters (which take the document) and the data-plane nodes of
// o, every region's locations first, then the other nodes, each joining the pool through the
// first; it returns once every node runs. Everything stops when ctx ends. On error,
// whatever started is stopped.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	c, err = newCluster(ctx, o)
	if err != nil {
		for _, t := range o.Targets {
			t.Close()
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if err := c.startTargets(); err != nil {
		return c, err
	}
	if err := c.startVoters(); err != nil {
		return c, err
	}
	if o.BeforeNodes != nil {
		o.BeforeNodes()
	}
	return c, c.startNodes()
}

// newCluster checks o and makes the cluster's simulated network, with nothing running.
func newCluster(ctx context.Context, o Options) (*Cluster, error) {
	if len(o.Regions) == 0 || o.DataDir == "" {
		return nil, errors.New("cluster: no regions or no data directory")
	}
	if o.Voters > 0 && len(o.ControlAPIs) > 0 {
		return nil, errors.New("cluster: voters and another control plane's APIs at once")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Layout == nil {
		o.Layout = []agent.Roles{agent.RoleLocation}
		for range cmp.Or(o.Checkers, DefaultCheckers) {
			o.Layout = append(o.Layout, agent.RoleChecker)
		}
	}
	c := &Cluster{o: o, log: o.Logger, apis: o.ControlAPIs, canaries: map[string]config.Check{}}
	if o.Voters > 0 {
		var err error
		if c.raftSecret, err = tlsconf.NewSecret(); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.specs = layout(o.Regions, o.Layout)
	links := slices.Clone(o.Regions)
	if o.CheckerLinks {
		for _, s := range c.specs {
			if s.roles == agent.RoleChecker {
				c.checkers = append(c.checkers, s.id)
				links = append(links, s.id)
			}
		}
	}
	var err error
	if c.sim, err = regions.NewNetwork(o.Seed, links...); err != nil {
		c.cancel()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return c, nil
}

// layout names the nodes of every region: those with the location role first, region by
// region, then the others.
func layout(rs []string, roles []agent.Roles) []spec {
	var first, rest []spec
	for _, r := range rs {
		var locs, checkers, both int
		for _, ro := range roles {
			s := spec{region: r, roles: ro}
			switch {
			case ro.Has(agent.RoleLocation) && ro.Has(agent.RoleChecker):
				both++
				s.id = fmt.Sprintf("%s-node-%d", r, both)
			case ro.Has(agent.RoleLocation):
				locs++
				s.id = r + "-location"
				if locs > 1 {
					s.id = fmt.Sprintf("%s-location-%d", r, locs)
				}
			default:
				checkers++
				s.id = fmt.Sprintf("%s-checker-%d", r, checkers)
			}
			if ro.Has(agent.RoleLocation) {
				first = append(first, s)
			} else {
				rest = append(rest, s)
			}
		}
	}
	return append(first, rest...)
}

// goRun runs f in a goroutine of the cluster, keeping its error unless the cluster stops.
func (c *Cluster) goRun(what string, f func(context.Context) error) {
	c.wg.Go(func() {
		if err := f(c.ctx); err != nil && c.ctx.Err() == nil {
			c.log.Error("cluster: stopped", "what", what, "err", err)
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Errorf("%s: %w", what, err))
			c.mu.Unlock()
		}
	})
}

// Wait waits until everything the cluster runs has stopped (once the context given to Start
// ends) and returns the errors of what stopped early, and of every node whose Run failed.
func (c *Cluster) Wait() error {
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.nodes {
		m.release()
	}
	return errors.Join(c.errs...)
}

// Stop stops everything and waits until it has.
func (c *Cluster) Stop() error {
	c.cancel()
	return c.Wait()
}

// startTargets places and runs every region's target, and starts the canary targets.
func (c *Cluster) startTargets() error {
	for r, t := range c.o.Targets {
		c.goRun("target "+r, t.Run)
	}
	for _, r := range c.o.Regions {
		if t, ok := c.o.Targets[r]; ok {
			if err := c.sim.PlaceTarget(t.Addr(), r); err != nil {
				return fmt.Errorf("cluster: %w", err)
			}
		}
	}
	if c.o.Canary != CanaryTarget {
		return nil
	}
	for _, r := range c.o.Regions {
		t, err := NewTarget("canary-"+r, "127.0.0.1:0")
		if err != nil {
			return err
		}
		c.goRun("canary "+r, t.Run)
		if c.canaries[r], err = c.canary(r, t.Addr()); err != nil {
			return err
		}
	}
	return nil
}

// Network returns the simulated network the cluster runs on.
func (c *Cluster) Network() *regions.Network { return c.sim }

// Regions returns the cluster's regions, in order.
func (c *Cluster) Regions() []string { return slices.Clone(c.o.Regions) }

// Target returns region's demo target, nil when it has none.
func (c *Cluster) Target(region string) *Target { return c.o.Targets[region] }

// Place places a target of address addr (host:port) in region: probes of it go over that
// region's links.
func (c *Cluster) Place(addr, region string) error {
	if err := c.sim.PlaceTarget(addr, region); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// Members returns the data-plane nodes, locations first, running or not.
func (c *Cluster) Members() []*Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// Location returns the running node of region's first location, nil when none runs.
func (c *Cluster) Location(region string) *agent.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.nodes {
		if m.cfg.Region == region && m.cfg.Roles.Has(agent.RoleLocation) && !m.down {
			return m.node
		}
	}
	return nil
}

// DNSAddr returns the DNS address of region's first location, which a restart keeps; "" when
// none runs.
func (c *Cluster) DNSAddr(region string) string {
	if l := c.Location(region); l != nil {
		return l.DNSAddr()
	}
	return ""
}

// HTTPAddr returns the HTTP address of region's first location; "" when none runs.
func (c *Cluster) HTTPAddr(region string) string {
	if l := c.Location(region); l != nil {
		return l.HTTPAddr()
	}
	return ""
}
