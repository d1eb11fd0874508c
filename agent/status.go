package agent

import (
	"net"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/history"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/status"
)

// MountStatus serves n's status API and page on n's HTTP listener, with n's metrics registry
// and logger: its node view, and its location and checker views when it runs those roles. It
// is what `vigil agent` and each node of `vigil dev` do between New and Run. edit, when not
// nil, changes the options before the API is made (e.g. to set Network.PeerURL where members
// are not reached at their gossip host). The node's own /healthz, /readyz and /metrics, being
// more specific patterns, answer those paths, in the shapes the API documents.
func (n *Node) MountStatus(edit func(*status.Options)) error {
	opts := n.statusOptions()
	opts.Gatherer, opts.Registerer, opts.Logger = n.Gatherer(), n.Registerer(), n.Logger()
	if edit != nil {
		edit(&opts)
	}
	api, err := status.New(opts)
	if err != nil {
		return err
	}
	return n.Handle("/", api)
}

// statusOptions returns the views of n that the status API reads, by the roles n runs.
func (n *Node) statusOptions() status.Options {
	opts := status.Options{Node: statusNode{n}}
	if n.cfg.Roles.Has(RoleLocation) {
		opts.Location = statusLocation{n}
		opts.History = statusHistory{n}
	}
	if _, port, err := net.SplitHostPort(n.HTTPAddr()); err == nil {
		opts.Network.PeerURL = status.HostPortURL(port)
	}
	if n.cfg.Roles.Has(RoleChecker) {
		opts.Checker = statusChecker{n}
	}
	return opts
}

// statusNode adapts *Node to status.NodeView.
type statusNode struct{ n *Node }

func (v statusNode) Identity() status.Identity { return v.n.identity() }

func (v statusNode) Members() []status.Member {
	ms := v.n.Members()
	out := make([]status.Member, 0, len(ms))
	for _, m := range ms {
		state := "alive"
		if m.Leaving {
			state = "left"
		}
		out = append(out, status.Member{ID: m.ID, Region: m.Region, Roles: roleNames(m.Roles), Addr: m.Addr,
			HTTP: m.HTTP, State: state})
	}
	return out
}

// roleNames lists a member's roles.
func roleNames(r gossip.Roles) []string {
	if s := r.String(); s != "none" {
		return strings.Split(s, "+")
	}
	return []string{}
}

func (v statusNode) Config() state.WatcherStatus { return v.n.ConfigInfo().WatcherStatus }

func (v statusNode) Readiness() status.Readiness { return v.n.Ready() }

// statusLocation adapts *Node's location to status.LocationView.
type statusLocation struct{ n *Node }

// A location lists its record sets for the status page's DNS view.
var _ status.HealthSetsView = statusLocation{}

func (v statusLocation) Verdicts() []status.CheckVerdict {
	m, err := v.n.Verdicts()
	if err != nil {
		return nil
	}
	out := make([]status.CheckVerdict, 0, len(m))
	for id, e := range m {
		out = append(out, status.CheckVerdict{ID: id, Verdict: e, Calculated: e.Rule == quorum.RuleCombined})
	}
	return out
}

func (v statusLocation) Explain(id string) (quorum.Explanation, bool) {
	e, err := v.n.ExplainCheck(id)
	return e, err == nil
}

func (v statusLocation) Checkers() []quorum.HeardChecker { return v.n.Checkers() }

func (v statusLocation) Zones() []location.ZoneState { return v.n.Zones() }

// Overrides returns the maintenance overrides the location holds.
func (v statusLocation) Overrides() []*state.Override { return v.n.Overrides() }

func (v statusLocation) Answer(name, rtype string) (routing.Result, error) {
	return v.n.Answer(name, rtype)
}

// HealthSetsOf returns the record sets whose answers check id can change in the zones served
// now: the sets of status's DNS view (GET /v1/answers).
func (v statusLocation) HealthSetsOf(id string) []location.SetName {
	if v.n.dns == nil {
		return nil
	}
	snap := v.n.dns.Snapshot()
	if snap == nil {
		return nil
	}
	return snap.HealthSetsOf(id)
}

// statusChecker adapts *Node's checker to status.CheckerView: each probe shows the check as
// the node's current configuration has it (target, interval, thresholds) and the checker's
// latest result of it, whole (lag, HTTP status, redirects and protocol too).
type statusChecker struct{ n *Node }

func (v statusChecker) Probes() []status.Probe {
	rs := v.n.CheckerResults()
	out := make([]status.Probe, 0, len(rs))
	for i := range rs {
		r := &rs[i]
		var last *checker.Result
		if res, ok := v.n.chk.LastResult(r.CheckID); ok {
			last = &res
		}
		check, ok := v.n.CheckConfig(r.CheckID)
		if !ok {
			check = config.Check{ID: r.CheckID} // unassigned since the report: its id alone
		}
		out = append(out, status.Probe{Check: check, Report: r, Last: last})
	}
	return out
}

func (v statusChecker) Self() checker.SelfHealth {
	s := v.n.Self()
	return checker.SelfHealth{Healthy: s.CheckerHealthy, Reason: s.CheckerReason}
}

// statusHistory adapts *Node's history to status.HistoryView.
type statusHistory struct{ n *Node }

func (v statusHistory) CheckHistory(id string, now time.Time) (history.CheckHistory, bool) {
	h, ok, _ := v.n.CheckHistory(id, now)
	return h, ok
}

func (v statusHistory) HistorySummaries(after string, limit int, now time.Time) ([]history.CheckHistory, string) {
	out, next, _ := v.n.HistorySummaries(after, limit, now)
	return out, next
}

func (v statusHistory) AnswerHistory(name string) []history.AnswerChange {
	out, _ := v.n.AnswerHistory(name)
	return out
}
