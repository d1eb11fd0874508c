package status

import (
	"net"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/history"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/node"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/routing"
)

// ForNode returns the options that serve n's status: its node view, and its location and
// checker views when it runs those roles. The caller adds Gatherer, Registerer and Logger.
// Mount the API with n.Handle("/", api) (or do all of it with Mount) before n.Run; the
// node's own /healthz, /readyz and /metrics, being more specific patterns, answer those
// paths, in the shapes the API documents.
func ForNode(n *node.Node) Options {
	opts := Options{Node: nodeView{n}}
	roles := n.Self().Roles
	if hasRole(roles, "location") {
		opts.Location = locationView{n}
		opts.History = historyView{n}
	}
	if _, port, err := net.SplitHostPort(n.HTTPAddr()); err == nil {
		opts.Network.PeerURL = HostPortURL(port)
	}
	if hasRole(roles, "checker") {
		opts.Checker = checkerView{n}
	}
	return opts
}

// hasRole reports whether roles ("checker+location") holds role.
func hasRole(roles, role string) bool {
	for r := range strings.SplitSeq(roles, "+") {
		if r == role {
			return true
		}
	}
	return false
}

// nodeView adapts *node.Node to NodeView.
type nodeView struct{ n *node.Node }

func (v nodeView) Identity() Identity {
	s := v.n.Self()
	return Identity{ID: s.ID, Region: s.Region, Roles: strings.Split(s.Roles, "+"), Version: s.Version}
}

func (v nodeView) Members() []Member {
	ms := v.n.Members()
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		state := "alive"
		if m.Leaving {
			state = "left"
		}
		out = append(out, Member{ID: m.ID, Region: m.Region, Roles: rolesOf(m.Roles), Addr: m.Addr, HTTP: m.HTTP, State: state})
	}
	return out
}

// rolesOf lists a member's roles.
func rolesOf(r gossip.Roles) []string {
	if s := r.String(); s != "none" {
		return strings.Split(s, "+")
	}
	return []string{}
}

func (v nodeView) Config() control.WatcherStatus {
	ci := v.n.ConfigInfo()
	return control.WatcherStatus{Source: ci.Source, Index: ci.Index, LastContact: ci.LastContact,
		LastError: ci.LastError, Message: ci.Message}
}

func (v nodeView) Readiness() Readiness {
	rd := v.n.Ready()
	return Readiness{Ready: rd.Ready, Reasons: rd.Reasons, Degraded: rd.Degraded}
}

// locationView adapts *node.Node's location to LocationView.
type locationView struct{ n *node.Node }

func (v locationView) Verdicts() []CheckVerdict {
	m, err := v.n.Verdicts()
	if err != nil {
		return nil
	}
	out := make([]CheckVerdict, 0, len(m))
	for id, e := range m {
		out = append(out, CheckVerdict{ID: id, Verdict: e, Calculated: e.Rule == quorum.RuleCombined})
	}
	return out
}

func (v locationView) Explain(id string) (quorum.Explanation, bool) {
	e, err := v.n.ExplainCheck(id)
	return e, err == nil
}

func (v locationView) Checkers() []HeardChecker {
	cs := v.n.Checkers()
	out := make([]HeardChecker, 0, len(cs))
	for _, c := range cs {
		if c.Reports == 0 && c.LastProgress.IsZero() {
			continue // a member this location holds no report from: not heard
		}
		out = append(out, HeardChecker{ID: c.ID, Region: c.Region, Fresh: c.Fresh, LastProgress: c.LastProgress,
			StaleSince: c.StaleSince, Reports: c.Reports})
	}
	return out
}

func (v locationView) Zones() []location.ZoneState { return v.n.Zones() }

// Overrides returns the maintenance overrides the location holds.
func (v locationView) Overrides() []*control.Override { return v.n.Overrides() }

func (v locationView) Answer(name, rtype string) (routing.Result, error) {
	return v.n.Answer(name, rtype)
}

// checkerView adapts *node.Node's checker to CheckerView: each probe shows the check as the
// node's current configuration has it (target, interval, thresholds) and the latest result's
// reason, message, address and timings by phase.
type checkerView struct{ n *node.Node }

func (v checkerView) Probes() []Probe {
	rs := v.n.CheckerResults()
	out := make([]Probe, 0, len(rs))
	for i := range rs {
		r := &rs[i]
		last := &checker.Result{Healthy: r.Reason == checker.ReasonOK, Reason: r.Reason, Message: r.Message,
			Start: r.At, Timings: r.Timings, Address: r.Address, CertNotAfter: r.CertNotAfter}
		check, ok := v.n.CheckConfig(r.CheckID)
		if !ok {
			check = config.Check{ID: r.CheckID} // unassigned since the report: its id alone
		}
		out = append(out, Probe{Check: check, Report: r, Last: last})
	}
	return out
}

func (v checkerView) Self() checker.SelfHealth {
	s := v.n.Self()
	return checker.SelfHealth{Healthy: s.CheckerHealthy, Reason: s.CheckerReason}
}

// historyView adapts *node.Node's history to HistoryView.
type historyView struct{ n *node.Node }

func (v historyView) CheckHistory(id string, now time.Time) (history.CheckHistory, bool) {
	h, ok, _ := v.n.CheckHistory(id, now)
	return h, ok
}

func (v historyView) HistorySummaries(after string, limit int, now time.Time) ([]history.CheckHistory, string) {
	out, next, _ := v.n.HistorySummaries(after, limit, now)
	return out, next
}

func (v historyView) AnswerHistory(name string) []history.AnswerChange {
	out, _ := v.n.AnswerHistory(name)
	return out
}

// Mount serves n's status API and page on n's HTTP listener, with n's metrics registry and
// logger: what `vigil agent` and each location of `vigil dev` do between node.New and Run.
func Mount(n *node.Node) error { return MountWith(n, nil) }

// MountWith is Mount with edit applied to the options before the API is made (e.g. to set
// Network.PeerURL where members are not reached at their gossip host).
func MountWith(n *node.Node, edit func(*Options)) error {
	opts := ForNode(n)
	opts.Gatherer, opts.Registerer, opts.Logger = n.Gatherer(), n.Registerer(), n.Logger()
	if edit != nil {
		edit(&opts)
	}
	api, err := New(opts)
	if err != nil {
		return err
	}
	return n.Handle("/", api)
}
