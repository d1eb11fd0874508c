package status

import (
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
)

// LocationView is what the status API reads of a DNS location. Every method is called from
// HTTP handlers, concurrently, and must not block on the network.
type LocationView interface {
	// Verdicts returns this location's current verdict for every check it evaluates, without
	// per-report evidence (quorum.Verdict.Summary), in any order: the verdicts DNS answers from.
	Verdicts() []CheckVerdict
	// Explain returns one check's verdict with its evidence (quorum.Explain or
	// quorum.ExplainCombined over the reports this location holds now); ok is false when the
	// location knows no check of that id.
	Explain(checkID string) (e quorum.Explanation, ok bool)
	// Checkers returns the checkers as this location hears them (see quorum.HeardFrom).
	Checkers() []quorum.HeardChecker
	// Answer returns what this location would answer now for the record set of name and DNS
	// type (e.g. "A"), as location.Server.Explain does; an error when there is no such set.
	Answer(name, rtype string) (routing.Result, error)
	// Zones returns every zone of the configuration as this location serves it, with the
	// error of each zone it could not install (location.Snapshot.ZoneStates).
	Zones() []location.ZoneState
}

// CheckVerdict is one check's verdict at a location.
type CheckVerdict struct {
	// ID is the check's id.
	ID string
	// Verdict is the location's decision, as quorum.Evaluate or quorum.Combine returned it,
	// summarised (quorum.Verdict.Summary).
	Verdict quorum.Explanation
	// Calculated says the check is calculated from other checks' verdicts.
	Calculated bool
}

// CheckerView is what the status API reads of a checker.
type CheckerView interface {
	// Probes returns every check assigned to this checker with its latest report and probe
	// result, in any order.
	Probes() []Probe
	// Self returns the checker's self-health (checker.Checker.Self).
	Self() checker.SelfHealth
}

// Probe is one assigned check at a checker: its configuration, the report the checker last
// emitted for it, and its latest probe result.
type Probe struct {
	// Check is the assigned check.
	Check config.Check
	// Report is the checker's current report (checker.Checker.Reports); nil until the first
	// result, or while the checker withdraws its reports.
	Report *checker.Report
	// Last is the latest probe result (from checker.Options.OnResult); nil before the first.
	Last *checker.Result
}

// NodeView is what the status API reads of every node.
type NodeView interface {
	// Identity returns who the node is and what it runs.
	Identity() Identity
	// Members returns the members of the pool as this node sees them, itself included.
	Members() []Member
	// Config says which configuration the node uses and where it came from
	// (client.Watcher.Status).
	Config() state.WatcherStatus
	// Readiness says whether the node is ready to serve.
	Readiness() Readiness
}

// Identity is who a node is.
type Identity struct {
	// ID is the node's name in the pool; Region its region.
	ID     string `json:"id"`
	Region string `json:"region"`
	// Roles are the roles the node runs: control, checker, location.
	Roles []string `json:"roles"`
	// Version is the build version.
	Version string `json:"version"`
	// Started is when the node started.
	Started time.Time `json:"started,omitzero"`
}

// Member is one member of the gossip pool as a node sees it.
type Member struct {
	// ID and Region identify the member.
	ID     string `json:"id"`
	Region string `json:"region"`
	// Roles are the member's roles.
	Roles []string `json:"roles"`
	// Addr is its gossip address (host:port).
	Addr string `json:"addr"`
	// HTTP is where it says its status API is (host:port; no host: the host of Addr), if it
	// says.
	HTTP string `json:"http,omitempty"`
	// State is how this node sees it: "alive", "suspect", "dead" or "left".
	State string `json:"state"`
}

// Readiness is whether a node is ready to serve: it has a configuration (from the control
// plane or its disk copy), has joined the gossip pool, and is warm (a location has had a
// freshness window to hear every reachable checker); and what it still lacks.
type Readiness struct {
	// Ready says every condition holds.
	Ready bool `json:"ready"`
	// Reasons lists, in words, what the node still lacks.
	Reasons []string `json:"reasons,omitempty"`
	// Degraded lists, in words, what a ready node serves otherwise than configured: each zone
	// a location could not install, and why.
	Degraded []string `json:"degraded,omitempty"`
}
