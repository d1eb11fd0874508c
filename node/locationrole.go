package node

import (
	"context"
	"fmt"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/quorum"
)

// locationState is what a location keeps between evaluations: the latest verdict of every
// check and what it was computed from, for explanations.
type locationState struct {
	verdicts    map[string]quorum.Verdict
	inputs      map[string]evalInput
	lastEval    time.Time
	warmAt      time.Time // the first evaluation a freshness window after the start
	evaluations uint64
}

// evalInput is what one check's verdict was computed from, so that Explain can compute the
// same verdict again with its evidence.
type evalInput struct {
	policy   quorum.Policy
	reports  []quorum.Report
	expected []string
	prev     quorum.Verdict
	// calculated checks
	calculated         bool
	minHealthy         int
	children           []string
	childVerdicts      []quorum.Verdict
	inverted, disabled bool
}

// newLocation creates the location role's DNS server and binds its sockets.
func (n *Node) newLocation() error {
	s, err := location.New(location.Config{
		Addr: n.cfg.DNSAddr, NameServers: n.cfg.NameServers, NameServerBudget: n.cfg.NameServerBudget,
		RRL: n.cfg.RRL, Registerer: n.reg, Logger: n.log,
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := s.Listen(); err != nil {
		return fmt.Errorf("node: dns: %w", err)
	}
	n.dns = s
	if n.lm, err = newLocationMetrics(n.reg); err != nil {
		return err
	}
	n.mu.Lock()
	st := n.state
	n.mu.Unlock()
	if st != nil {
		n.installZones(st, control.Changes{Full: true})
	}
	return nil
}

// closeDNS closes the sockets of a server that was never served.
func closeDNS(s *location.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Serve(ctx)
}

// evaluate decides every check of the configuration at now, children before their parents,
// and hands the verdicts to the DNS server. Its work is bounded by the number of checks and
// reports the node holds.
func (n *Node) evaluate(now time.Time) {
	n.mu.Lock()
	doc, plan := n.doc, n.plan
	prevs := n.loc.verdicts
	n.mu.Unlock()
	if doc == nil {
		return
	}
	t0 := time.Now()
	held := n.pool.Reports()
	byCheck := map[string][]quorum.Report{}
	for _, r := range held {
		if r.Entry.Status == gossip.StatusUnknown {
			continue // a checker with no status yet says nothing
		}
		byCheck[r.Check] = append(byCheck[r.Check], quorum.Report{
			Checker: r.Checker, Region: r.Region, Healthy: r.Entry.Status == gossip.StatusHealthy,
			Reason: r.Entry.Reason, Latency: r.Entry.Latency, Sequence: r.Seq, LastProgress: r.LastProgress,
		})
	}
	verdicts := make(map[string]quorum.Verdict, len(doc.Checks))
	inputs := make(map[string]evalInput, len(doc.Checks))
	serving := make(map[string]bool, len(doc.Checks))
	for _, id := range doc.EvalOrder() {
		c, _ := doc.CheckByID(id)
		prev := prevs[id]
		var v quorum.Verdict
		var in evalInput
		if c.Protocol == config.ProtocolCalculated {
			in = evalInput{calculated: true, minHealthy: c.MinHealthy, children: c.Children,
				inverted: c.Inverted, disabled: c.Disabled, prev: prev}
			in.childVerdicts = make([]quorum.Verdict, len(c.Children))
			for i, child := range c.Children {
				in.childVerdicts[i] = verdicts[child]
			}
			v = quorum.Combine(in.minHealthy, in.childVerdicts, in.inverted, in.disabled, prev, now)
		} else {
			in = evalInput{policy: quorum.PolicyFor(*c, doc.Quorum), reports: byCheck[id], prev: prev}
			if plan != nil {
				for _, r := range c.Regions {
					in.expected = append(in.expected, plan.Shard(id, r)...)
				}
			}
			v = quorum.Evaluate(in.policy, in.reports, in.expected, prev, now)
		}
		if prev.State != v.State || prev.At.IsZero() {
			n.lm.changed(id, v.State)
		}
		verdicts[id], inputs[id], serving[id] = v, in, v.Serving()
	}
	n.installVerdicts(now, freshnessWindow(doc), verdicts, inputs, serving)
	n.m.observe(verdicts, time.Since(t0).Seconds())
	n.lm.observe(verdicts, held, plan, doc, now)
}

// installVerdicts hands an evaluation's verdicts to the DNS server and keeps them for reads
// (Verdicts, ExplainCheck, the next evaluation's previous verdicts) under one lock, so that
// what a read returns is what DNS serves. They are installed even when the configuration
// changed during the evaluation: DNS serves them until the next evaluation either way.
// (They used to reach DNS first and the reads only when the configuration had not changed;
// under steady control-plane writes, found by `vigil sim chaos`, DNS served a verdict that
// no read ever saw.)
func (n *Node) installVerdicts(now time.Time, window time.Duration, verdicts map[string]quorum.Verdict, inputs map[string]evalInput, serving map[string]bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dns.SetVerdicts(serving)
	n.loc.verdicts, n.loc.inputs = verdicts, inputs
	n.loc.lastEval = now
	n.loc.evaluations++
	if n.loc.warmAt.IsZero() && now.Sub(n.started) >= window {
		n.loc.warmAt = now
	}
}

// explain recomputes one check's verdict with its evidence from its recorded inputs.
func (in evalInput) explain(ids []string, at time.Time) quorum.Explanation {
	if in.calculated {
		return quorum.ExplainCombined(in.minHealthy, ids, in.childVerdicts, in.inverted, in.disabled, in.prev, at)
	}
	return quorum.Explain(in.policy, in.reports, in.expected, in.prev, at)
}
