package sim

// The ddos scenario's network: a document of many zones and the one agent runtime that serves
// them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/dev"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/node"
)

// ddosZone names zone i of the document.
func ddosZone(i int) string { return fmt.Sprintf("z%02d.ddos.vigil.test.", i) }

// ddosAnswer is the address zone i's www record holds, so that a probe can tell its zone's
// answer from any other.
func ddosAnswer(i int) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, byte(1 + i%250)}) }

// ddosDocument returns a document of n zones, each with one A record, sharded by ns.
func ddosDocument(n int, ns config.NameServerSettings) (*config.Document, error) {
	var b strings.Builder
	b.WriteString("regions: [us-east]\nzones:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: %s\n    record_sets:\n      - {name: www, type: A, records: [{value: %s}]}\n", ddosZone(i), ddosAnswer(i))
	}
	doc, err := config.Decode([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("sim: ddos document: %w", err)
	}
	doc.NameServers = ns
	return doc, nil
}

// ddosNode is the scenario's one node and what the scenario reads from it.
type ddosNode struct {
	node   *node.Node
	cancel context.CancelFunc
	done   chan error
}

// startDDoSNode starts a node with the control and location roles hosting every virtual name
// server of fleet on 127.0.1.<i+1> and applies doc through its control API.
func startDDoSNode(ctx context.Context, cfg DDoSConfig, doc *config.Document, dir string) (*ddosNode, error) {
	raftPort, err := freePort()
	if err != nil {
		return nil, err
	}
	key, err := gossip.ParseKey(dev.DemoKey)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	c := node.DefaultConfig()
	c.ID, c.Region, c.Roles, c.DataDir = "ddos-location", "us-east", node.RoleControl|node.RoleLocation, dir
	c.HTTPAddr, c.DNSAddr, c.EvalInterval = "off", "127.0.0.1:0", 100*time.Millisecond
	c.Gossip.Bind, c.Gossip.Keys, c.Gossip.Profile = "127.0.0.1:0", [][]byte{key}, gossip.ProfileLocal
	c.Control.RaftAddr, c.Control.APIAddr = fmt.Sprintf("127.0.0.1:%d", raftPort), "127.0.0.1:0"
	c.Control.Bootstrap, c.Control.WriteTokens = true, []string{nodesToken}
	c.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond,
		LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	c.Control.RaftLogLevel = slog.LevelWarn
	c.Token = nodesToken
	c.NameServers = map[int]string{}
	for i := range doc.NameServers.Fleet {
		c.NameServers[i] = fmt.Sprintf("127.0.1.%d:0", i+1)
	}
	c.NameServerBudget = cfg.Budget
	c.Registerer = prometheus.NewRegistry()
	c.Logger = cfg.Logger.With("node", c.ID)
	nd, err := node.New(c)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	dn := &ddosNode{node: nd, cancel: cancel, done: make(chan error, 1)}
	go func() { dn.done <- nd.Run(runCtx) }()
	body, err := json.Marshal(doc)
	if err != nil {
		_ = dn.stop()
		return nil, fmt.Errorf("sim: document: %w", err)
	}
	api := nd.Self().ControlAPI
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := putDocument(ctx, api, body)
		if err == nil {
			return dn, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = dn.stop()
			return nil, fmt.Errorf("sim: the voter took no document within 30s: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop stops the node and waits until it has stopped (at most 20s).
func (d *ddosNode) stop() error {
	d.cancel()
	select {
	case err := <-d.done:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("sim: the ddos node did not stop within 20s")
	}
}
