package cluster

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
)

// startNodes starts every data-plane node of the layout, each joining the pool through the
// first.
func (c *Cluster) startNodes() error {
	var seed string
	for _, s := range c.specs {
		m, err := c.addNode(s, seed)
		if err != nil {
			return err
		}
		if seed == "" {
			seed = m.node.GossipAddr()
		}
	}
	return nil
}

// addNode starts the data-plane node s, joining the pool through join (none: it is the
// first).
func (c *Cluster) addNode(s spec, join string) (*Member, error) {
	link := s.region
	if c.o.CheckerLinks && s.roles == agent.RoleChecker {
		link = s.id
	}
	cfg, err := c.nodeConfig(s, join)
	if err != nil {
		return nil, err
	}
	m := &Member{c: c, cfg: cfg, link: link, freshReg: cfg.Registerer == nil}
	if c.o.SourceAddrs && s.roles.Has(agent.RoleChecker) {
		m.src = c.sourceAddr()
	}
	if err := c.run(m); err != nil {
		return nil, err
	}
	// A restart keeps the DNS port, as a restarted process would.
	m.cfg.DNSAddr = m.node.DNSAddr()
	c.mu.Lock()
	c.nodes = append(c.nodes, m)
	c.mu.Unlock()
	return m, nil
}

// nodeConfig is the configuration of the data-plane node s, which joins the pool through join
// (none: it is the first).
func (c *Cluster) nodeConfig(s spec, join string) (agent.Config, error) {
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = s.id, s.region, s.roles, filepath.Join(c.o.DataDir, s.id)
	if len(c.apis) > 0 {
		cfg.Voters, cfg.Token = c.apis, c.o.Token
	} else {
		cfg.Static = c.o.Document
	}
	cfg.Gossip.Keys, cfg.Gossip.Profile = [][]byte{c.o.Key}, gossip.ProfileLocal
	cfg.Gossip.HeartbeatInterval, cfg.Gossip.RejoinInterval = 500*time.Millisecond, time.Second
	if join != "" {
		cfg.Gossip.Join = []string{join}
	}
	cfg.DNSAddr, cfg.HTTPAddr, cfg.EvalInterval = "127.0.0.1:0", "off", 100*time.Millisecond
	cfg.Probe.AllowLoopback = true
	if s.roles.Has(agent.RoleChecker) {
		canary, err := c.canaryOf(s.region)
		if err != nil {
			return cfg, err
		}
		if canary != nil {
			cfg.Probe.Canaries = []config.Check{*canary}
		}
	}
	cfg.Logger = c.log.With("node", s.id)
	if c.o.Node != nil {
		c.o.Node(&cfg)
	}
	return cfg, nil
}

// canaryOf returns the canary check of region's checkers, nil when they have none.
func (c *Cluster) canaryOf(region string) (*config.Check, error) {
	switch c.o.Canary {
	case CanaryTarget:
		ch := c.canaries[region]
		return &ch, nil
	case CanaryLocation:
		if ch, ok := c.canaries[region]; ok {
			return &ch, nil
		}
		addr := c.HTTPAddr(region)
		if addr == "" {
			return nil, fmt.Errorf("cluster: canary of %s: no location serving HTTP", region)
		}
		ch, err := c.canary(region, addr)
		if err != nil {
			return nil, err
		}
		c.canaries[region] = ch
		return &ch, nil
	}
	return nil, nil
}

// canary places addr in region and returns the TCP check of it that region's checkers probe
// as their canary.
func (c *Cluster) canary(region, addr string) (config.Check, error) {
	ch := config.DefaultCheck()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return ch, fmt.Errorf("cluster: canary: %w", err)
	}
	ch.ID, ch.Protocol = "canary-"+region, config.ProtocolTCP
	ch.Target = config.Target{Host: ap.Addr().String(), Port: int(ap.Port())}
	ch.Interval, ch.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
	if err := c.sim.PlaceTarget(addr, region); err != nil {
		return ch, fmt.Errorf("cluster: canary: %w", err)
	}
	return ch, nil
}

// Grow starts count more checkers at once, spread over the regions in turn, each on a
// simulated link of its own and joining the pool through a running node (a different one for
// each), and returns their IDs. It needs Options.CheckerLinks.
func (c *Cluster) Grow(count int) ([]string, error) {
	if !c.o.CheckerLinks {
		return nil, errors.New("cluster: grow: the checkers have no links of their own")
	}
	c.mu.Lock()
	var seeds []string
	perRegion := map[string]int{}
	for _, m := range c.nodes {
		if m.cfg.Roles.Has(agent.RoleChecker) {
			perRegion[m.cfg.Region]++
		}
		seeds = append(seeds, m.node.GossipAddr())
	}
	c.mu.Unlock()
	if len(seeds) == 0 {
		return nil, errors.New("cluster: grow: no running node to join through")
	}
	var added []string
	for i := range count {
		r := c.o.Regions[i%len(c.o.Regions)]
		perRegion[r]++
		s := spec{id: fmt.Sprintf("%s-checker-%d", r, perRegion[r]), region: r, roles: agent.RoleChecker}
		if err := c.sim.AddRegion(s.id); err != nil {
			return added, fmt.Errorf("cluster: grow: %w", err)
		}
		c.mu.Lock()
		c.checkers = append(c.checkers, s.id)
		c.mu.Unlock()
		if _, err := c.addNode(s, seeds[i%len(seeds)]); err != nil {
			return added, fmt.Errorf("cluster: grow: %w", err)
		}
		added = append(added, s.id)
	}
	return added, nil
}
