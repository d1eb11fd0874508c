package agent

import (
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/gossip"
)

// newChecker creates the checker role: its reports become this node's gossip row.
func (n *Node) newChecker() error {
	opts := checker.Options{
		Name:        n.cfg.ID,
		Concurrency: n.cfg.Probe.Concurrency,
		Canaries:    n.cfg.Probe.Canaries,
		OnResult:    n.cfg.Probe.OnResult,
		Prober: checker.ProberOptions{
			Dialer:    n.cfg.Dialer,
			Addresses: checker.AddressPolicy{Allow: n.cfg.Probe.Allow, AllowLoopback: n.cfg.Probe.AllowLoopback},
			RootCAs:   n.cfg.Probe.RootCAs,
		},
		Registerer: n.reg,
		Logger:     n.log,
		OnReport:   n.publish,
		OnSelf: func(s checker.SelfHealth) {
			if !s.Healthy {
				n.log.Warn("node: checker isolated: every report withdrawn", "reason", s.Reason)
				if err := n.pool.WithdrawAll(); err != nil {
					n.log.Error("node: withdraw all", "err", err)
				}
				return
			}
			n.log.Info("node: checker reaches its targets again")
		},
	}
	c, err := checker.New(opts)
	if err != nil {
		return err
	}
	n.chk = c
	return nil
}

// publish turns one checker report into this node's gossip row: set, or withdrawn.
func (n *Node) publish(r checker.Report) {
	var err error
	if r.Withdrawn {
		err = n.pool.Withdraw(r.CheckID)
	} else {
		err = n.pool.Publish(r.CheckID, entryOf(r))
	}
	if err != nil {
		n.log.Error("node: publish report", "check", r.CheckID, "err", err)
	}
}

// entryOf is a report as gossip carries it.
func entryOf(r checker.Report) gossip.Entry {
	e := gossip.Entry{Status: r.Status, Consecutive: uint32(max(r.Consecutive, 0)), Latency: r.Latency}
	e.Reason = string(r.Reason)
	if r.Message != "" && r.Message != e.Reason {
		e.Reason += ": " + r.Message
	}
	return e // gossip cuts a reason longer than gossip.MaxReasonLen as it publishes it
}
