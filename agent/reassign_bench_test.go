package agent

import (
	"fmt"
	"testing"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/gossip"
)

// BenchmarkReassign: a checker node (New, not run) holding a configuration of C checks, the
// only checker of its region, so every check of its region is its own. The work of
// Node.reassign under three causes: nothing changed (idle), a write that changed one of its
// checks (write: the plan changed for that check, the checker given its checks again), and a
// membership that moved (membership: the plan brought to another membership and back, the
// checker given its checks again). The checker's own SetChecks is part of the path.
func BenchmarkReassign(b *testing.B) {
	for _, c := range []int{10_000, 100_000} {
		doc := config.Scale{Checks: c}.Document()
		cfg := DefaultConfig()
		cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "chk", doc.Regions[0], RoleChecker, b.TempDir()
		cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
		cfg.HTTPAddr, cfg.Probe.AllowLoopback = "off", true
		cfg.Static, cfg.Logger, cfg.Registerer = doc, testLogger(), newReg()
		n, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(n.Close)
		n.reassign()
		id := doc.Checks[len(doc.Checks)/2].ID
		if got := benchAssigned(n); got != c {
			b.Fatalf("the checker holds %d checks, want %d", got, c)
		}
		b.Run(fmt.Sprintf("checks=%d/idle", c), func(b *testing.B) {
			for b.Loop() {
				n.reassign()
			}
		})
		b.Run(fmt.Sprintf("checks=%d/write", c), func(b *testing.B) {
			for b.Loop() {
				benchWrite(n, id)
				n.reassign()
			}
		})
		b.Run(fmt.Sprintf("checks=%d/membership", c), func(b *testing.B) {
			for b.Loop() {
				benchMove(n)
				n.reassign()
			}
		})
		if got := benchAssigned(n); got != c {
			b.Fatalf("the checker holds %d checks, want %d", got, c)
		}
	}
}

// benchAssigned returns how many checks the node's checker was last given, as its metric
// says.
func benchAssigned(n *Node) int {
	mfs, err := n.gat.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "vigil_checker_checks_assigned" && len(mf.GetMetric()) == 1 {
			return int(mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	return -1
}

// benchWrite does to the node's assignment what a write that changed check id does
// (setConfig's part of it, with the same configuration).
func benchWrite(n *Node, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.configureLocked(n.state, state.Changes{Checks: []string{id}})
}

// benchMove brings the node's plan to an empty membership, so that its next reassign finds
// the membership moved.
func benchMove(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.asg.SetMembers(shard.Membership{}); err != nil {
		panic(err)
	}
}
