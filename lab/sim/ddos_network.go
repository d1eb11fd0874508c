package sim

// The ddos scenario's network: a document of many zones and the one agent runtime that serves
// them.

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/lab/cluster"
	"github.com/vigil-dns/vigil/lab/dev"
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

// ddosNode is the scenario's one node, a cluster of one voter that is also the location.
type ddosNode struct {
	c    *cluster.Cluster
	node *agent.Node
}

// startDDoSNode starts a node with the control and location roles hosting every virtual name
// server of fleet on 127.0.1.<i+1> and applies doc through its control API.
func startDDoSNode(ctx context.Context, cfg DDoSConfig, doc *config.Document, dir string) (*ddosNode, error) {
	key, err := gossip.ParseKey(dev.DemoKey)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	c, err := cluster.Start(ctx, cluster.Options{
		Regions: []string{"us-east"}, DataDir: dir, Logger: cfg.Logger, Document: doc,
		Voters: 1, Token: nodesToken, Key: key, Layout: []agent.Roles{},
		Voter: func(c *agent.Config) {
			c.ID, c.Region, c.Roles = "ddos-location", "us-east", agent.RoleControl|agent.RoleLocation
			c.DNSAddr, c.EvalInterval = "127.0.0.1:0", 100*time.Millisecond
			c.Gossip.Bind, c.Gossip.Keys, c.Gossip.Profile = "127.0.0.1:0", [][]byte{key}, gossip.ProfileLocal
			c.Token = nodesToken
			c.NameServers = map[int]string{}
			for i := range doc.NameServers.Fleet {
				c.NameServers[i] = fmt.Sprintf("127.0.1.%d:0", i+1)
			}
			c.NameServerBudget = cfg.Budget
			c.Logger = cfg.Logger.With("node", c.ID)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return &ddosNode{c: c, node: c.Voters()[0].Node()}, nil
}

// stop stops the node and waits until it has stopped.
func (d *ddosNode) stop() error { return d.c.Stop() }
