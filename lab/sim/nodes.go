package sim

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/lab/cluster"
	"github.com/vigil-dns/vigil/lab/dev"
	"github.com/vigil-dns/vigil/quorum"
)

// checkersPerRegion is the number of checkers per region of the nodes network.
const checkersPerRegion = 3

// nodesOptions vary the nodes network; the zero value is the network described above.
type nodesOptions struct {
	// checkers is the number of checkers per region; default checkersPerRegion.
	checkers int
	// tune, when set, adjusts each node's configuration before the node first starts.
	tune func(c *agent.Config)
}

// nodesToken is the control API token of the nodes network, which listens on loopback only.
const nodesToken = "vigil-sim"

// nodesNetwork is three regions of agent runtimes (package node) on the regions simulated
// network, started by package cluster: per region one location and three checkers, each
// checker on a simulated link of its own (named by its ID, linked to every region) so that
// it alone can lose its network, with a probe source address of its own and a canary target
// per region. With a control plane, its voters (real raft, BoltDB, the control API over
// loopback) feed every node's Watcher, and every node keeps the disk copy it restarts from;
// without, the nodes run the document statically.
type nodesNetwork struct {
	*cluster.Cluster
	heapBase uint64 // the heap kept (HeapSample.Kept) before the first node started
}

// startNodes starts the targets of cfg, voterCount voters (none: the nodes run doc), and the
// nodes; they stop when ctx ends or wait is called.
func startNodes(ctx context.Context, cfg dev.Config, doc *config.Document, dir string, log *slog.Logger, voterCount int, opts nodesOptions) (*nodesNetwork, error) {
	key, err := gossip.ParseKey(dev.DemoKey)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	targets, err := cluster.NewTargets(cfg.Targets)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	n := &nodesNetwork{}
	n.Cluster, err = cluster.Start(ctx, cluster.Options{
		Regions: cfg.Regions, Seed: cfg.Seed, DataDir: dir, Logger: log,
		Document: doc, Voters: voterCount, Token: nodesToken, Key: key, Targets: targets,
		Checkers: cmp.Or(opts.checkers, checkersPerRegion), CheckerLinks: true, SourceAddrs: true,
		Canary: cluster.CanaryTarget, Node: opts.tune,
		BeforeNodes: func() { n.heapBase = quietHeap().Kept() },
	})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return n, nil
}

// wait stops every node and target and waits until they have.
func (n *nodesNetwork) wait() error { return n.Stop() }

// Verdicts returns the location's verdicts; none while it has no configuration.
func (n *nodesNetwork) Verdicts(location string) map[string]verdictView {
	l := n.Location(location)
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
		if v.Counts.Unhealthy == 0 {
			continue
		}
		// The summary names no checker; the evidence does. It is read a moment later, so it
		// may differ from the summary by a report: the sampler reads again soon.
		e, err := l.ExplainCheck(id)
		if err != nil {
			continue
		}
		vv := out[id]
		for _, x := range e.Votes {
			if x.Status == quorum.VoteUnhealthy && !slices.Contains(vv.UnhealthyFrom, x.Checker) {
				vv.UnhealthyFrom = append(vv.UnhealthyFrom, x.Checker)
			}
		}
		slices.Sort(vv.UnhealthyFrom)
		out[id] = vv
	}
	return out
}
