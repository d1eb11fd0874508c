package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/node"
)

// chaosVoters is the size of the control plane a chaos script runs: three voters, so that
// one (the leader) can be killed and the other two elect a new leader.
const chaosVoters = 3

// voters returns how many control voters the script's network runs: three with any chaos
// step (kill, start, kill-leader, cut-oneway, loss, latency; a generated script always ends
// with "start all"), one when it only loses the control plane, else none.
func (sc Script) voters() int {
	for _, st := range sc.Steps {
		switch st.Kind {
		case StepKill, StepStart, StepKillLeader, StepCutOneWay, StepLoss, StepLatency:
			return chaosVoters
		}
	}
	if sc.needsControl() {
		return 1
	}
	return 0
}

// voterID names the i-th voter (from 0) of a control plane of several.
func voterID(i int) string { return fmt.Sprintf("voter-%d", i+1) }

// startVoters starts count voters (the first bootstraps the cluster, the others join it
// through its API), applies doc through the API and returns the voters' API URLs. A voter
// keeps its raft and API addresses across a restart, as a restarted process would.
func (n *nodesNetwork) startVoters(dir string, doc *config.Document, count int) ([]string, error) {
	var apis []string
	for i := range count {
		raftPort, err := freePort()
		if err != nil {
			return nil, err
		}
		apiPort, err := freePort()
		if err != nil {
			return nil, err
		}
		id := voterID(i)
		c := node.DefaultConfig()
		c.ID, c.Roles, c.DataDir, c.HTTPAddr = id, node.RoleControl, filepath.Join(dir, id), "off"
		c.Control.RaftAddr = fmt.Sprintf("127.0.0.1:%d", raftPort)
		c.Control.APIAddr = fmt.Sprintf("127.0.0.1:%d", apiPort)
		c.Control.APIURL = "http://" + c.Control.APIAddr
		c.Control.WriteTokens = []string{nodesToken}
		if i == 0 {
			c.Control.Bootstrap = true
		} else {
			c.Control.Join = slices.Clone(apis)
		}
		c.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond,
			LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
		c.Control.RaftLogLevel = slog.LevelWarn
		c.Logger = n.log.With("node", id)
		rn := &running{cfg: c}
		if err := n.run(rn); err != nil {
			return nil, err
		}
		n.mu.Lock()
		n.voters = append(n.voters, rn)
		n.mu.Unlock()
		apis = append(apis, c.Control.APIURL)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("sim: document: %w", err)
	}
	// The document goes in once every voter is a member, so that the cluster holds it with
	// any one voter down.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := n.clusterFormed(apis[0], count)
		if err == nil {
			err = putDocument(n.ctx, apis[0], body)
		}
		if err == nil {
			return apis, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("sim: the control plane of %d voters did not form and take the document within 30s: %w", count, err)
		}
		select {
		case <-n.ctx.Done():
			return nil, fmt.Errorf("sim: %w", n.ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// clusterFormed returns nil when the voter at api knows a leader and count voters.
func (n *nodesNetwork) clusterFormed(api string, count int) error {
	cv, err := getCluster(n.ctx, api)
	if err != nil {
		return err
	}
	if cv.Leader == "" || len(cv.Servers) < count {
		return fmt.Errorf("%d of %d voters, leader %q", len(cv.Servers), count, cv.Leader)
	}
	return nil
}

// getCluster reads the cluster as the voter at api sees it, within 3s.
func getCluster(ctx context.Context, api string) (control.ClusterView, error) {
	c, err := voterClient(api)
	if err != nil {
		return control.ClusterView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return c.Cluster(ctx)
}

// stopVoters stops every running voter of a control plane of several, for good.
func (n *nodesNetwork) stopVoters() error {
	n.mu.Lock()
	var ids []string
	for _, v := range n.voters {
		if !v.down {
			ids = append(ids, v.cfg.ID)
		}
	}
	n.mu.Unlock()
	if len(ids) == 0 {
		return errors.New("this network has no control plane running")
	}
	for _, id := range ids {
		if err := n.Kill(id); err != nil {
			return err
		}
	}
	return nil
}

// ControlAPIs returns the API URLs of the control voters, running or not.
func (n *nodesNetwork) ControlAPIs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, v := range n.voters {
		out = append(out, v.cfg.Control.APIURL)
	}
	if n.voter != nil {
		out = append(out, n.voter.node.Self().ControlAPI)
	}
	return out
}

// find returns the node or voter named id.
func (n *nodesNetwork) find(id string) (*running, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, rn := range slices.Concat(n.voters, n.nodes) {
		if rn.cfg.ID == id {
			return rn, nil
		}
	}
	var ids []string
	for _, rn := range slices.Concat(n.voters, n.nodes) {
		ids = append(ids, rn.cfg.ID)
	}
	return nil, fmt.Errorf("no node %q (nodes: %s)", id, strings.Join(ids, ", "))
}

// Kill stops the node or voter named id (the steps are run one at a time); it stays down
// until Start.
func (n *nodesNetwork) Kill(id string) error {
	rn, err := n.find(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	down := rn.down
	n.mu.Unlock()
	if down {
		return fmt.Errorf("%s is already down", id)
	}
	// Marked down once stopped: until then a location still answers from its verdicts,
	// which the sampler goes on reading.
	err = n.halt(rn)
	n.mu.Lock()
	rn.down = true
	if err == nil && rn.cfg.Roles&node.RoleLocation != 0 {
		rn.held = holdPort(rn.cfg.DNSAddr)
	}
	n.mu.Unlock()
	return err
}

// releaseHeld closes the sockets held for killed locations. The caller holds n.mu.
func (n *nodesNetwork) releaseHeld() {
	for _, rn := range n.nodes {
		for _, c := range rn.held {
			_ = c.Close()
		}
		rn.held = nil
	}
}

// holdPort binds a killed location's DNS address, UDP and TCP, and never answers: a dead
// host, whose queries time out. On a machine shared with other programs, a freed port may
// otherwise be bound by another DNS server, whose answers the history would hold against
// the location (it happened: a 10-minute run recorded answers from a location that was
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
// every voter that is down, "all" every node. A data-plane node rejoins the pool through
// the running ones.
func (n *nodesNetwork) Start(id string) error {
	var todo []*running
	if id == "all" || id == "voters" {
		n.mu.Lock()
		for _, rn := range slices.Concat(n.voters, n.nodes) {
			if rn.down && (id == "all" || rn.cfg.Roles&node.RoleControl != 0) {
				todo = append(todo, rn)
			}
		}
		n.mu.Unlock()
	} else {
		rn, err := n.find(id)
		if err != nil {
			return err
		}
		todo = append(todo, rn)
	}
	for _, rn := range todo {
		n.mu.Lock()
		if !rn.down {
			n.mu.Unlock()
			return fmt.Errorf("%s is running", rn.cfg.ID)
		}
		for _, c := range rn.held {
			_ = c.Close()
		}
		rn.held = nil
		if rn.cfg.Roles&(node.RoleChecker|node.RoleLocation) != 0 {
			rn.cfg.Gossip.Join = nil
			for _, o := range n.nodes {
				if !o.down {
					rn.cfg.Gossip.Join = append(rn.cfg.Gossip.Join, o.node.GossipAddr())
				}
			}
		}
		err := n.run(rn)
		if err == nil {
			rn.down = false
		}
		n.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// KillLeader stops the control plane's leader, as a running voter sees it, and returns its
// ID. It waits (at most 15s) for a leader to be known.
func (n *nodesNetwork) KillLeader() (string, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		n.mu.Lock()
		var apis []string
		for _, v := range n.voters {
			if !v.down {
				apis = append(apis, v.cfg.Control.APIURL)
			}
		}
		n.mu.Unlock()
		var last error = errors.New("no voter running")
		for _, api := range apis {
			cv, err := getCluster(n.ctx, api)
			if err == nil && cv.Leader != "" {
				return cv.Leader, n.Kill(cv.Leader)
			}
			if err == nil {
				err = fmt.Errorf("%s knows no leader", cv.ID)
			}
			last = err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no leader known within 15s: %w", last)
		}
		select {
		case <-n.ctx.Done():
			return "", fmt.Errorf("sim: %w", n.ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// members returns the simulated regions that make up region r on the nodes network: its
// location's link and the links of its checkers.
func (n *nodesNetwork) members(r string) []string {
	out := []string{r}
	for _, c := range n.checkers {
		if strings.HasPrefix(c, r+"-checker-") {
			out = append(out, c)
		}
	}
	return out
}

// betweenRegions calls f for every pair of simulated regions, one of region a, one of b.
func (n *nodesNetwork) betweenRegions(a, b string, f func(x, y string) error) error {
	if !slices.Contains(n.regions, a) || !slices.Contains(n.regions, b) || a == b {
		return fmt.Errorf("regions %q and %q: want two regions of %s", a, b, strings.Join(n.regions, ", "))
	}
	for _, x := range n.members(a) {
		for _, y := range n.members(b) {
			if err := f(x, y); err != nil {
				return fmt.Errorf("sim: %w", err)
			}
		}
	}
	return nil
}

// cutRegions cuts one region from every other, or two regions apart: every link between
// the location and checkers of one and those of the other, gossip and probes.
func (n *nodesNetwork) cutRegions(rs ...string) error {
	if len(rs) == 2 {
		return n.betweenRegions(rs[0], rs[1], n.sim.Cut)
	}
	for _, o := range n.regions {
		if o != rs[0] {
			if err := n.betweenRegions(rs[0], o, n.sim.Cut); err != nil {
				return err
			}
		}
	}
	return nil
}

// CutOneWay loses every packet from region from to region to; connections between them
// fail either way.
func (n *nodesNetwork) CutOneWay(from, to string) error {
	return n.betweenRegions(from, to, n.sim.CutOneWay)
}

// SetLoss loses that fraction (0 to 1) of the packets between regions a and b, each way.
func (n *nodesNetwork) SetLoss(a, b string, p float64) error {
	return n.betweenRegions(a, b, func(x, y string) error { return n.sim.SetLoss(x, y, p) })
}

// SetLatency delays every packet between regions a and b by d, each way.
func (n *nodesNetwork) SetLatency(a, b string, d time.Duration) error {
	return n.betweenRegions(a, b, func(x, y string) error { return n.sim.SetLatency(x, y, d) })
}
