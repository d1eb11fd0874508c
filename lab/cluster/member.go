package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/agent"
)

// LabelNode and LabelRole are the pprof labels every goroutine a node starts carries,
// memberlist's included, so that the goroutine profile tells the nodes apart.
const LabelNode, LabelRole = "vigil_node", "vigil_role"

// haltBound bounds how long a node takes to stop.
const haltBound = 20 * time.Second

// Member is one node of the cluster, a voter or a data-plane node, with what it takes to
// restart it from its data directory.
type Member struct {
	c    *Cluster
	cfg  agent.Config
	link string // its simulated link: its region, its own ID, or none (a voter)
	src  netip.Addr
	// freshReg: the configuration names no registry, so every start gets a fresh one.
	freshReg bool

	node   *agent.Node
	cancel context.CancelFunc
	done   chan error
	down   bool        // stopped by Kill until Start (under c.mu)
	held   []io.Closer // a killed location's DNS sockets, held until it starts (under c.mu)
}

// ID returns the member's node ID.
func (m *Member) ID() string { return m.cfg.ID }

// Config returns the configuration the member last started with.
func (m *Member) Config() agent.Config { return m.cfg }

// Node returns the node of the member's last start.
func (m *Member) Node() *agent.Node {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return m.node
}

// Source returns the checker's own source address for its probes; none without
// Options.SourceAddrs, or where the host does not route all of 127/8 to loopback.
func (m *Member) Source() netip.Addr { return m.src }

// Down reports whether the member was stopped by Kill and not started since.
func (m *Member) Down() bool {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return m.down
}

// run creates m's node on a fresh transport of its link and runs it until it is stopped.
func (c *Cluster) run(m *Member) error {
	if m.link != "" {
		tr, err := c.sim.NewTransport(m.link)
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		dialer, err := c.sim.Dialer(m.link)
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		if m.src.IsValid() {
			dialer.Dialer.LocalAddr = &net.TCPAddr{IP: m.src.AsSlice()}
		}
		m.cfg.Transport, m.cfg.Dialer = tr, dialer
	}
	if m.freshReg {
		m.cfg.Registerer = prometheus.NewRegistry()
	}
	labels := pprof.Labels(LabelNode, m.cfg.ID, LabelRole, m.cfg.Roles.String())
	var nd *agent.Node
	var err error
	pprof.Do(c.ctx, labels, func(context.Context) {
		nd, err = agent.New(m.cfg) // binds every socket; Run releases them
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	m.node = nd
	if c.o.Mount != nil {
		if err := c.o.Mount(m.cfg, nd); err != nil {
			nd.Close()
			return fmt.Errorf("cluster: %s: %w", m.cfg.ID, err)
		}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	m.cancel, m.done = cancel, make(chan error, 1)
	done := m.done
	c.wg.Go(func() {
		var err error
		pprof.Do(ctx, labels, func(ctx context.Context) { err = nd.Run(ctx) })
		if err != nil { // a node's Run returns nil when its context ends
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Errorf("node %s: %w", m.cfg.ID, err))
			c.mu.Unlock()
		}
		done <- err
	})
	return nil
}

// halt stops m's node and waits until it has stopped (at most haltBound).
func (c *Cluster) halt(m *Member) error {
	m.cancel()
	select {
	case <-m.done:
		return nil
	case <-time.After(haltBound):
		return fmt.Errorf("node %s did not stop within %s", m.cfg.ID, haltBound)
	}
}

// find returns the node or voter named id.
func (c *Cluster) find(id string) (*Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := slices.Concat(c.voters, c.nodes)
	for _, m := range all {
		if m.cfg.ID == id {
			return m, nil
		}
	}
	var ids []string
	for _, m := range all {
		ids = append(ids, m.cfg.ID)
	}
	return nil, fmt.Errorf("no node %q (nodes: %s)", id, strings.Join(ids, ", "))
}

// Kill stops the node or voter named id; it stays down until Start. A killed location's DNS
// port stays bound and silent, as a dead host's.
func (c *Cluster) Kill(id string) error {
	m, err := c.find(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	down := m.down
	c.mu.Unlock()
	if down {
		return fmt.Errorf("%s is already down", id)
	}
	// Marked down once stopped: until then a location still answers from its verdicts,
	// which a caller may go on reading.
	err = c.halt(m)
	c.mu.Lock()
	m.down = true
	if err == nil && m.cfg.Roles.Has(agent.RoleLocation) {
		m.held = holdPort(m.cfg.DNSAddr)
	}
	c.mu.Unlock()
	return err
}

// release closes the sockets held for a killed location. The caller holds c.mu.
func (m *Member) release() {
	for _, h := range m.held {
		_ = h.Close()
	}
	m.held = nil
}

// holdPort binds a killed location's DNS address, UDP and TCP, and never answers: a dead
// host, whose queries time out. On a machine shared with other programs, a freed port may
// otherwise be bound by another DNS server, whose answers a history would hold against the
// location (it happened: a 10-minute chaos run recorded answers from a location that was
// down). What cannot be bound is left free.
func holdPort(addr string) []io.Closer {
	var out []io.Closer
	if pc, err := net.ListenPacket("udp", addr); err == nil {
		out = append(out, pc)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		out = append(out, ln)
	}
	return out
}

// Start starts the node or voter named id again from its data directory; "voters" starts
// every voter that is down, "all" every member. A data-plane node rejoins the pool through
// the running ones.
func (c *Cluster) Start(id string) error {
	var todo []*Member
	if id == "all" || id == "voters" {
		c.mu.Lock()
		for _, m := range slices.Concat(c.voters, c.nodes) {
			if m.down && (id == "all" || m.cfg.Roles.Has(agent.RoleControl)) {
				todo = append(todo, m)
			}
		}
		c.mu.Unlock()
	} else {
		m, err := c.find(id)
		if err != nil {
			return err
		}
		todo = append(todo, m)
	}
	for _, m := range todo {
		if err := c.restart(m); err != nil {
			return err
		}
	}
	return nil
}

// restart starts the killed member m, a data-plane node joining the pool through the running
// ones.
func (c *Cluster) restart(m *Member) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !m.down {
		return fmt.Errorf("%s is running", m.cfg.ID)
	}
	m.release()
	if m.cfg.Roles&(agent.RoleChecker|agent.RoleLocation) != 0 {
		m.cfg.Gossip.Join = nil
		for _, o := range c.nodes {
			if !o.down {
				m.cfg.Gossip.Join = append(m.cfg.Gossip.Join, o.node.GossipAddr())
			}
		}
	}
	err := c.run(m)
	if err == nil {
		m.down = false
	}
	return err
}

// Restart stops and restarts every data-plane node, one at a time, from its data directory;
// each rejoins the pool through a node that is running.
func (c *Cluster) Restart() error {
	nodes := c.Members()
	for i, m := range nodes {
		if err := c.halt(m); err != nil {
			return err
		}
		c.mu.Lock()
		m.cfg.Gossip.Join = []string{nodes[(i+1)%len(nodes)].node.GossipAddr()}
		err := c.run(m)
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// sourceAddr returns a loopback address of its own for the next checker's probes, so that
// the sockets it holds can be told apart from every other node's: 127.0.1.1, 127.0.1.2, ...
// Where the host does not route all of 127/8 to loopback (macOS), it returns no address, and
// the checker's sockets are counted with the process's other sockets.
func (c *Cluster) sourceAddr() netip.Addr {
	c.mu.Lock()
	i := c.srcs
	c.srcs++
	c.mu.Unlock()
	a := netip.AddrFrom4([4]byte{127, 0, byte(1 + i/250), byte(1 + i%250)})
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: a.AsSlice()})
	if err != nil {
		return netip.Addr{}
	}
	ln.Close()
	return a
}
