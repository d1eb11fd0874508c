package agent

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/status"
)

// The read-only view of a node, for the status API. Every method returns plain values that
// the caller owns, is safe for concurrent use, and is cheap: none probes, queries or
// evaluates anything.

// ErrNoLocation is returned by the location's read methods on a node without that role.
var ErrNoLocation = errors.New("node: this node has no location role")

// SelfInfo describes the node itself: who it is (as the status API shows it), where it
// listens, and its checker's self-health.
type SelfInfo struct {
	status.Identity
	// GossipAddr, DNSAddr, HTTPAddr and ControlAPI are the node's addresses (empty when the
	// node does not run that part).
	GossipAddr string `json:"gossip_addr,omitempty"`
	DNSAddr    string `json:"dns_addr,omitempty"`
	HTTPAddr   string `json:"http_addr,omitempty"`
	ControlAPI string `json:"control_api,omitempty"`
	// CheckerHealthy and CheckerReason are the checker's self-health (checker role only).
	CheckerHealthy bool   `json:"checker_healthy"`
	CheckerReason  string `json:"checker_reason,omitempty"`
	// AssignedChecks is how many checks this checker probes.
	AssignedChecks int `json:"assigned_checks"`
}

// Self describes the node: identity, roles, addresses and the checker's self-health.
func (n *Node) Self() SelfInfo {
	s := SelfInfo{Identity: n.identity(), HTTPAddr: n.HTTPAddr()}
	if n.pool != nil {
		s.GossipAddr = n.pool.Addr()
	}
	if n.dns != nil {
		s.DNSAddr = n.dns.Addr().String()
	}
	if n.ctl != nil {
		s.ControlAPI = n.cfg.Control.APIURL
	}
	if n.chk != nil {
		h := n.chk.Self()
		s.CheckerHealthy, s.CheckerReason = h.Healthy, h.Reason
		n.mu.Lock()
		if plan := n.asg.Plan(); plan != nil {
			s.AssignedChecks = len(plan.ChecksFor(n.cfg.Region, n.cfg.ID))
		}
		n.mu.Unlock()
	}
	return s
}

// identity says who the node is: its id, region, roles and version.
func (n *Node) identity() status.Identity {
	return status.Identity{ID: n.cfg.ID, Region: n.cfg.Region, Roles: strings.Split(n.cfg.Roles.String(), "+"),
		Version: n.cfg.Version}
}

// Version returns the node's software version.
func (n *Node) Version() string { return n.cfg.Version }

// Members returns the live members of the gossip pool, this node included, sorted by id.
func (n *Node) Members() []gossip.Member {
	if n.pool == nil {
		return nil
	}
	return n.pool.Members()
}

// ConfigInfo says which configuration the node runs, where it came from (the status API's
// state.WatcherStatus) and what it holds.
type ConfigInfo struct {
	// WatcherStatus: Index is the control plane's raft index of the configuration (0 for none
	// or static); Source is "control-plane", "disk" (the local copy, no voter answered),
	// "static" or "none" (never seen one: the node serves nothing); Message says the same in
	// words; LastContact and LastError are the Watcher's last answer and failure.
	state.WatcherStatus
	// Regions, Checks and Zones count what the configuration holds.
	Regions int `json:"regions"`
	Checks  int `json:"checks"`
	Zones   int `json:"zones"`
}

// ConfigInfo returns the configuration's index and source.
func (n *Node) ConfigInfo() ConfigInfo {
	n.mu.Lock()
	ci := ConfigInfo{WatcherStatus: state.WatcherStatus{Source: n.source}}
	if n.state != nil {
		ci.Index = n.state.Index
		ci.Regions, ci.Checks, ci.Zones = len(n.state.Regions()), n.state.NumChecks(), n.state.NumZones()
	}
	n.mu.Unlock()
	switch {
	case n.watcher != nil:
		ws := n.watcher.Status()
		ci.Message, ci.Voter, ci.LastContact, ci.LastError = ws.Message, ws.Voter, ws.LastContact, ws.LastError
		ci.LastErrorVoter, ci.LastErrorCause, ci.LastErrorAt = ws.LastErrorVoter, ws.LastErrorCause, ws.LastErrorAt
	case ci.Source == SourceStatic:
		ci.Message = "running from a static configuration given at start"
	case n.pool == nil:
		ci.Message = "control voter only: the data plane runs no configuration here"
	default:
		ci.Message = "no configuration: this node serves nothing"
	}
	return ci
}

// Verdicts returns this location's verdict of every check, without per-report evidence, by
// check id: what DNS serves now.
func (n *Node) Verdicts() (map[string]quorum.Explanation, error) {
	if n.dns == nil {
		return nil, ErrNoLocation
	}
	l := &n.loc
	l.mu.Lock()
	defer l.mu.Unlock()
	_, decided := l.engine.Len()
	out := make(map[string]quorum.Explanation, decided)
	n.mu.Lock()
	expected := n.expectedLocked()
	n.mu.Unlock()
	l.engine.Each(expected, func(id string, v quorum.Verdict) { out[id] = v.Summary() })
	return out, nil
}

// expectedLocked returns, for the location's reads, each check's expected checkers under the
// current assignment (nil: no plan). The caller holds n.mu while it calls the result.
func (n *Node) expectedLocked() func(id string) []string {
	plan, s := n.asg.Plan(), n.state
	if plan == nil || s == nil {
		return nil
	}
	regions := s.Regions()
	return func(id string) []string {
		var out []string
		for _, r := range regions {
			out = append(out, plan.Shard(id, r)...)
		}
		return out
	}
}

// ExplainCheck returns this location's verdict of one check with its evidence: every
// checker's vote or why it did not count (with the checker's reason, latency and sequence as
// the gossip table holds them), and the expected checkers never heard from.
func (n *Node) ExplainCheck(id string) (quorum.Explanation, error) {
	if n.dns == nil {
		return quorum.Explanation{}, ErrNoLocation
	}
	held := n.pool.ReportsFor(id)
	l := &n.loc
	l.mu.Lock()
	defer l.mu.Unlock()
	n.mu.Lock()
	var expected []string
	if f := n.expectedLocked(); f != nil {
		expected = f(id)
	}
	n.mu.Unlock()
	e, ok := l.engine.Explain(id, expected, held)
	if !ok {
		return quorum.Explanation{}, fmt.Errorf("node: check %q: no verdict (unknown check, or not evaluated yet)", id)
	}
	return e, nil
}

// Checkers returns the checkers this location holds reports of or has heard, with their
// freshness as the verdict engine counts it, sorted by region then id; nil without the
// location role. A checker's region is the one it gossips as a member, else its reports'.
func (n *Node) Checkers() []quorum.HeardChecker {
	if n.dns == nil || n.pool == nil {
		return nil
	}
	regions := map[string]string{}
	for _, m := range n.pool.Members() {
		if m.Roles.Has(gossip.RoleChecker) && m.Region != "" {
			regions[m.ID] = m.Region
		}
	}
	var out []quorum.HeardChecker
	l := &n.loc
	l.mu.Lock()
	l.engine.Checkers(func(c quorum.HeardChecker) {
		if c.Reports == 0 && c.LastProgress.IsZero() {
			return // known, never heard: not a checker this location hears
		}
		c.Region = cmp.Or(regions[c.ID], c.Region)
		out = append(out, c)
	})
	l.mu.Unlock()
	quorum.SortHeard(out)
	return out
}

// CheckerResults returns this node's checker's current reports (not withdrawn ones), sorted
// by check id; nil without the checker role.
func (n *Node) CheckerResults() []checker.Report {
	if n.chk == nil {
		return nil
	}
	return n.chk.Reports()
}

// CheckConfig returns the check of the configuration this node runs now, by id.
func (n *Node) CheckConfig(id string) (config.Check, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state == nil {
		return config.Check{}, false
	}
	c, ok := n.state.CheckRef(id)
	if !ok {
		return config.Check{}, false
	}
	return *c, true
}

// Answer says what this location answers now for the record set of name and type (e.g.
// "www.demo.vigil.test.", "A"), and why: the routing decision from the current zones and
// verdicts.
func (n *Node) Answer(name, qtype string) (routing.Result, error) {
	if n.dns == nil {
		return routing.Result{}, ErrNoLocation
	}
	return n.dns.Explain(name, qtype, uint64(time.Now().UnixNano()))
}

// Ready reports whether the node has a configuration, has joined the pool, and (as a
// location) is warm: it has evaluated at least once a freshness window after its start, so
// it has had time to hear every reachable checker. Degraded lists each zone a location could
// not install: it does not make the node unready, as taking the location out would stop
// every other zone too.
func (n *Node) Ready() status.Readiness {
	var rd status.Readiness
	n.mu.Lock()
	hasConfig := n.state != nil
	n.mu.Unlock()
	n.loc.mu.Lock()
	warm := !n.loc.warmAt.IsZero()
	n.loc.mu.Unlock()
	// A node with no peers to join is the pool's first member; any other has joined once it
	// sees another member.
	joined := n.pool != nil && (len(n.cfg.Gossip.Join) == 0 || len(n.pool.Members()) > 1)
	if n.pool != nil {
		if !hasConfig {
			rd.Reasons = append(rd.Reasons, n.noConfigReason())
		}
		if !joined {
			reason := "not joined to the gossip pool"
			if f, ok := n.pool.LastJoinFailure(); ok {
				reason += fmt.Sprintf(": joining %s failed: %s (%s)", strings.Join(f.Peers, ","), f.Cause, f.Err)
			}
			rd.Reasons = append(rd.Reasons, reason)
		}
	}
	if n.dns != nil && !warm {
		rd.Reasons = append(rd.Reasons, "location warming up: not yet a freshness window of reports")
	}
	if n.ctl != nil && !n.ctl.node.Ready() {
		rd.Reasons = append(rd.Reasons, "control voter catching up with its raft log")
	}
	if n.dns != nil {
		for _, f := range n.dns.Snapshot().Failures() {
			rd.Degraded = append(rd.Degraded, zoneFailure(f))
		}
		unsigned := n.dns.Unsigned()
		for _, apex := range slices.Sorted(maps.Keys(unsigned)) {
			rd.Degraded = append(rd.Degraded, "zone "+apex+" is signed but answered unsigned here (validating resolvers get SERVFAIL): "+unsigned[apex])
		}
		xfr := n.transferProblems()
		for _, apex := range slices.Sorted(maps.Keys(xfr)) {
			rd.Degraded = append(rd.Degraded, "zone "+apex+" is not transferred to one of its secondaries from here: "+xfr[apex])
		}
	}
	rd.Ready = len(rd.Reasons) == 0
	return rd
}

// noConfigReason says why the node has no configuration: the voter that failed last and how,
// while a Watcher has one to tell.
func (n *Node) noConfigReason() string {
	if n.watcher != nil {
		if ws := n.watcher.Status(); ws.LastErrorVoter != "" {
			return ws.Message + "; last error: " + ws.LastError
		}
	}
	return "no configuration yet: serving nothing"
}

// DNSAddr returns the address of the location's main DNS listener (UDP and TCP), or "".
func (n *Node) DNSAddr() string {
	if n.dns == nil {
		return ""
	}
	return n.dns.Addr().String()
}

// NameServerAddr returns the address virtual name server index listens on (UDP and TCP), or
// "" when this node does not host it.
func (n *Node) NameServerAddr(index int) string {
	if n.dns == nil {
		return ""
	}
	a := n.dns.NameServerAddr(index)
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// GossipAddr returns the node's gossip address for others to join, or "".
func (n *Node) GossipAddr() string {
	if n.pool == nil {
		return ""
	}
	return n.pool.Addr()
}

// ControlAPIAddr returns the address the control API listens on, or "".
func (n *Node) ControlAPIAddr() string {
	if n.ctl == nil {
		return ""
	}
	return n.ctl.apiAddr()
}

// freshnessWindow is the document's freshness window, as verdicts apply it (the default
// without a document).
func freshnessWindow(doc *config.Document) time.Duration {
	if doc == nil {
		return quorum.FreshnessWindow(config.QuorumSettings{})
	}
	return quorum.FreshnessWindow(doc.Quorum)
}

// Document returns the configuration the node runs as one whole document (a copy, built at
// each call: read it when ConfigInfo's index changes), or nil before it has one.
func (n *Node) Document() *config.Document {
	n.mu.Lock()
	s := n.state
	n.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Document()
}
