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

// The JSON bodies of the status API. The server writes them and the client reads them with the
// same types, so every field round-trips: names of states, rules and votes are strings,
// durations are Go durations ("15s"), times RFC 3339.

// ErrorBody is the body of every error response.
type ErrorBody struct {
	// Error says what went wrong.
	Error string `json:"error"`
}

// VerdictList is GET /v1/verdicts: every verdict of a location, with the matrix of checks by
// region that the status page draws.
type VerdictList struct {
	// Location is the answering node; Region its region.
	Location string `json:"location"`
	Region   string `json:"region"`
	// GeneratedAt is when the list was made, by the location's clock.
	GeneratedAt time.Time `json:"generated_at"`
	// Regions are the matrix's columns: every region a checker was heard from or is a member
	// of, sorted.
	Regions []string `json:"regions"`
	// Checks are the verdicts, sorted by check id.
	Checks []VerdictSummary `json:"checks"`
	// Overrides are the maintenance overrides in force at this location.
	Overrides []OverrideNote `json:"overrides,omitempty"`
	// Tally counts the checks listed by the state DNS acts on, those an override forces
	// apart.
	Tally VerdictTally `json:"tally"`
}

// VerdictTally counts a location's checks by the state DNS acts on: Healthy, Unhealthy and
// Unknown count the checks that their verdict decides; ForcedHealthy and ForcedUnhealthy
// those that an override forces, whatever their verdict.
type VerdictTally struct {
	Healthy         int `json:"healthy"`
	Unhealthy       int `json:"unhealthy"`
	Unknown         int `json:"unknown"`
	ForcedHealthy   int `json:"forced_healthy"`
	ForcedUnhealthy int `json:"forced_unhealthy"`
}

// add counts one check.
func (t *VerdictTally) add(s VerdictSummary) {
	switch {
	case s.Override != nil && s.ServedState == quorum.StateHealthy:
		t.ForcedHealthy++
	case s.Override != nil:
		t.ForcedUnhealthy++
	case s.State == quorum.StateHealthy:
		t.Healthy++
	case s.State == quorum.StateUnhealthy:
		t.Unhealthy++
	default:
		t.Unknown++
	}
}

// VerdictSummary is one check's verdict without per-report evidence, and what each region's
// checkers say of it. It is a view, not quorum.Explanation itself: it adds the check's id,
// whether it is calculated, the override in force and the region cells, between the
// explanation's fields in the order the API has always written them (an embedded
// quorum.Explanation would move them); its parts are quorum's own types (State, Rule, Counts).
type VerdictSummary struct {
	// ID is the check's id.
	ID string `json:"id"`
	// State is the verdict: "healthy", "unhealthy" or "unknown".
	State quorum.State `json:"state"`
	// ServedState is the state DNS acts on: the one an override forces ("healthy" or
	// "unhealthy") while one is in force (see Override), else State.
	ServedState quorum.State `json:"served_state"`
	// ServedAsHealthy says DNS answers with the check's records (healthy or unknown, or
	// forced healthy by an override).
	ServedAsHealthy bool `json:"served_as_healthy"`
	// Override is the maintenance override that forces the check, if one is in force.
	Override *OverrideNote `json:"override,omitempty"`
	// Held says the state is an earlier one, kept because too few reports are fresh.
	Held bool `json:"held"`
	// Calculated says the check is computed from other checks' verdicts.
	Calculated bool `json:"calculated"`
	// Rule is the quorum rule applied ("threshold", "held", "short", "disabled", "combined").
	Rule quorum.Rule `json:"rule"`
	// Explanation says the verdict in one sentence.
	Explanation string `json:"explanation"`
	// EvaluatedAt is when the verdict was computed; Since when its state last changed.
	EvaluatedAt time.Time `json:"evaluated_at"`
	Since       time.Time `json:"since"`
	// HeldSince is when the fresh reports ran short.
	HeldSince time.Time `json:"held_since,omitzero"`
	// Counts are what the verdict counted.
	Counts quorum.Counts `json:"counts"`
	// HealthyThreshold is the healthy fraction that had to be exceeded.
	HealthyThreshold float64 `json:"healthy_threshold"`
	// MinReporters (probed checks) and MinHealthy (calculated checks) are the minimums.
	MinReporters int `json:"min_reporters,omitempty"`
	MinHealthy   int `json:"min_healthy,omitempty"`
	// Regions says, for each region with a checker expected or heard, what its checkers say
	// (absent for calculated checks).
	Regions map[string]RegionCell `json:"regions,omitempty"`
}

// The states of a region's cell in the matrix.
const (
	// CellHealthy: more than half of the region's fresh reports say healthy.
	CellHealthy = "healthy"
	// CellUnhealthy: the region has fresh reports, and no more than half of them say healthy.
	CellUnhealthy = "unhealthy"
	// CellStale: the region's reports are all stale at this location.
	CellStale = "stale"
	// CellUnknown: the location holds no report from the region (its checkers withdrew them,
	// or are expected and never heard).
	CellUnknown = "unknown"
)

// RegionCell is what one region's checkers say of one check, as this location hears them.
// Votes are the checkers' own (before inversion). It is derived here (regionCells): quorum
// counts a check's reports as a whole, never by region.
type RegionCell struct {
	// State is CellHealthy, CellUnhealthy, CellStale or CellUnknown.
	State string `json:"state"`
	// The region's reports by vote, and its expected checkers never heard from.
	Healthy    int `json:"healthy"`
	Unhealthy  int `json:"unhealthy"`
	Stale      int `json:"stale"`
	NeverHeard int `json:"never_heard"`
}

// CheckEvidence is GET /v1/verdicts/{id}: one check's verdict with its full evidence.
type CheckEvidence struct {
	VerdictSummary
	// FreshnessWindow is how long a report counts after its checker was last heard.
	FreshnessWindow config.Duration `json:"freshness_window,omitzero"`
	// Hold is how long an earlier state is held when reports run short.
	Hold config.Duration `json:"hold"`
	// Inverted and Disabled are the check's switches.
	Inverted bool `json:"inverted"`
	Disabled bool `json:"disabled"`
	// Votes are the reports this location holds: each one's vote or why it does not count
	// (quorum's own, as quorum.Explain made them).
	Votes []quorum.Vote `json:"votes"`
	// NeverHeard are the expected checkers this location holds no report from.
	NeverHeard []Absent `json:"never_heard"`
	// Children are a calculated check's children (quorum's own, as quorum.ExplainCombined
	// made them).
	Children []quorum.ChildVote `json:"children,omitempty"`
}

// Absent is an expected checker this location holds no report from. It is derived:
// quorum.Explanation.NeverHeard names the checker only, and the status API adds its region
// (from membership) and why it does not count.
type Absent struct {
	// Checker is its id; Region its region when this node knows it.
	Checker string `json:"checker"`
	Region  string `json:"region,omitempty"`
	// Why says why it does not count.
	Why string `json:"why"`
}

// CheckerList is GET /v1/checkers: the checkers as a location hears them.
type CheckerList struct {
	// Location is the answering node.
	Location string `json:"location"`
	// GeneratedAt is when the list was made.
	GeneratedAt time.Time `json:"generated_at"`
	// Checkers are sorted by region, then id.
	Checkers []quorum.HeardChecker `json:"checkers"`
}

// ZoneList is GET /v1/served-zones: the zones of the configuration as a location serves them.
type ZoneList struct {
	// Location is the answering node.
	Location string `json:"location"`
	// Zones are sorted by apex; a zone with an error was not installed (the others were).
	Zones []location.ZoneState `json:"zones"`
}

// Answer is GET /v1/answer: what a location would answer now for a name and type.
type Answer struct {
	// Name (absolute, lower case) and Type are the question.
	Name string `json:"name"`
	Type string `json:"type"`
	// Policy is the record set's routing policy; Rule how the answer was reached.
	Policy string `json:"policy"`
	Rule   string `json:"rule"`
	// LastResort says no record was healthy, so all were treated as healthy.
	LastResort bool `json:"last_resort"`
	// Values are the answered records' data, in answer order.
	Values []string `json:"values"`
	// Candidates are every record of the set and what the selection made of it (a drained
	// record's health check is override:drain): routing's own, as routing.Explain made them.
	Candidates []routing.Candidate `json:"candidates"`
	// Overrides are the maintenance overrides in force that change this answer.
	Overrides []OverrideNote `json:"overrides,omitempty"`
	// Region is the region a nearest set answered from, and RegionReason why.
	Region       string `json:"region,omitempty"`
	RegionReason string `json:"region_reason,omitempty"`
}

// AnswerList is GET /v1/answers, the DNS view: what this location answers now for each record
// set that consults a health check, by name and type. It is derived: the routing decision of
// each set, which no domain type lists.
type AnswerList struct {
	// Location is the asked node; GeneratedAt when it answered.
	Location    string    `json:"location"`
	GeneratedAt time.Time `json:"generated_at"`
	// Sets counts the record sets that consult a health check; Matching those whose name
	// contains the query's q; LastResort those listed that answer in last resort.
	Sets       int `json:"sets"`
	Matching   int `json:"matching"`
	LastResort int `json:"last_resort"`
	// Answers are the first of the matching sets (at most the query's limit), by name and type.
	Answers []AnswerSet `json:"answers"`
}

// AnswerSet is one record set's answer in the DNS view, or why there is none (a zone not
// installed).
type AnswerSet struct {
	Answer
	Error string `json:"error,omitempty"`
}

// ProbeList is GET /v1/probes: a checker's assigned checks and latest results.
type ProbeList struct {
	// Checker is the answering node; Region its region.
	Checker string `json:"checker"`
	Region  string `json:"region"`
	// Self is the checker's self-health (GET /v1/self).
	Self checker.SelfHealth `json:"self"`
	// Probes are sorted by check id.
	Probes []ProbeStatus `json:"probes"`
}

// ProbeStatus is one assigned check at a checker.
type ProbeStatus struct {
	// Check is the check's id; Protocol and Target what it probes.
	Check    string `json:"check"`
	Protocol string `json:"protocol,omitempty"`
	Target   string `json:"target,omitempty"`
	// Interval is the check's probe interval (zero when the node does not say).
	Interval config.Duration `json:"interval,omitzero"`
	// Status is the reported status after rise/fall: "healthy", "unhealthy", or "unknown"
	// (no report out: not probed yet, or withdrawn while the checker is isolated).
	Status string `json:"status"`
	// Consecutive counts the latest results with the same outcome; Sequence orders reports.
	Consecutive int    `json:"consecutive"`
	Sequence    uint64 `json:"sequence,omitempty"`
	// Last is the latest probe result; absent before the first.
	Last *ProbeResult `json:"last,omitempty"`
}

// ProbeResult is one probe's outcome, with its timings.
type ProbeResult struct {
	// Healthy says the probe met every condition of the check.
	Healthy bool `json:"healthy"`
	// Reason is the reason code (e.g. "status", "timeout"); Message says it for a person.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// At is when the probe began; Lag how late after its due time.
	At  time.Time       `json:"at"`
	Lag config.Duration `json:"lag"`
	// Timings are the probe's phases.
	Timings Timings `json:"timings"`
	// Address is the address reached; StatusCode the last HTTP status; Redirects followed.
	Address string `json:"address,omitempty"`
	// Protocol is the protocol the probe spoke (checker.Result.Protocol): http/1.1, http/1.0,
	// h2, h2c, udp or tcp.
	Protocol   string `json:"protocol,omitempty"`
	StatusCode int    `json:"status_code,omitempty"`
	Redirects  int    `json:"redirects,omitempty"`
	// CertNotAfter is the expiry of the target's certificate (HTTPS).
	CertNotAfter time.Time `json:"cert_not_after,omitzero"`
}

// Timings are a probe's phases (see checker.Timings), written as Go durations ("1.5ms"):
// checker.Timings holds time.Duration, which JSON would write as nanoseconds.
type Timings struct {
	DNS       config.Duration `json:"dns"`
	Connect   config.Duration `json:"connect"`
	TLS       config.Duration `json:"tls"`
	FirstByte config.Duration `json:"first_byte"`
	Total     config.Duration `json:"total"`
}

// NodeInfo is GET /v1/node: who the node is, its configuration and its readiness.
type NodeInfo struct {
	Identity
	// Config is the configuration in use: its index and source (control plane or disk copy).
	Config state.WatcherStatus `json:"config"`
	// Readiness says whether the node is ready, and what it lacks.
	Readiness Readiness `json:"readiness"`
}

// MemberList is GET /v1/members: the pool as this node sees it.
type MemberList struct {
	// Node is the answering node.
	Node string `json:"node"`
	// Members are sorted by region, then id.
	Members []Member `json:"members"`
}

// Digest is GET /v1/network/digest: a location's verdicts in brief, and which regions'
// checkers it hears; what the other locations fetch for their network view. It is a view
// derived from the verdicts, the checkers heard and the history, kept small (about 100 bytes a
// check) because every other location fetches it.
type Digest struct {
	// Location is the answering node; Region its region.
	Location string `json:"location"`
	Region   string `json:"region"`
	// GeneratedAt is when the digest was made, by the location's clock.
	GeneratedAt time.Time `json:"generated_at"`
	// Heard counts, per region, the checkers this location holds reports from and of them
	// the fresh ones.
	Heard []RegionHeard `json:"heard"`
	// Checks are the verdicts, sorted by id.
	Checks []DigestCheck `json:"checks"`
	// Overrides are the maintenance overrides in force at the location: what DNS serves
	// differs from Checks where they force a check or drain a record.
	Overrides []OverrideNote `json:"overrides,omitempty"`
}

// RegionHeard is how many of a region's checkers a location hears.
type RegionHeard struct {
	Region string `json:"region"`
	Fresh  int    `json:"fresh"`
	Total  int    `json:"total"`
}

// DigestCheck is one check's verdict in brief: its id and what the network view's cell of
// this location shows.
type DigestCheck struct {
	ID string `json:"id"`
	NetworkCell
}

// NetworkView is GET /v1/network: every location's verdict of every check, side by side, one
// page of checks at a time. It is derived: the merge of every location's Digest, which no
// domain type holds.
type NetworkView struct {
	// Location is the asked node; GeneratedAt when it answered.
	Location    string    `json:"location"`
	GeneratedAt time.Time `json:"generated_at"`
	// Locations are the columns: this one first, then the others by id, each reachable or
	// with the error that kept it out.
	Locations []NetworkLocation `json:"locations"`
	// Checks counts every check; Disagreements those on which reachable locations differ;
	// Unknown those on which the reachable agree but a location could not be asked (whether
	// every location agrees is not known); Matching those that pass the query's search and
	// filter.
	Checks        int `json:"checks"`
	Disagreements int `json:"disagreements"`
	Unknown       int `json:"unknown"`
	Matching      int `json:"matching"`
	// Rows are the page, sorted by id; Next is the cursor of the next page (empty: last).
	Rows []NetworkRow `json:"rows"`
	Next string       `json:"next,omitempty"`
}

// NetworkLocation is one location of the network view.
type NetworkLocation struct {
	ID     string `json:"id"`
	Region string `json:"region"`
	// Self marks the asked location.
	Self bool `json:"self,omitempty"`
	// URL is where its status API was asked.
	URL string `json:"url,omitempty"`
	// Reachable says its digest arrived; Error says why not.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// GeneratedAt is its digest's time; Heard whom it hears; Checks how many verdicts it has.
	GeneratedAt time.Time     `json:"generated_at,omitzero"`
	Heard       []RegionHeard `json:"heard,omitempty"`
	Checks      int           `json:"checks"`
}

// NetworkRow is one check across the locations.
type NetworkRow struct {
	ID string `json:"id"`
	// Cells are the reachable locations' verdicts, by location id.
	Cells map[string]NetworkCell `json:"cells"`
	// Disagree says the cells' states differ; Reason says who says what and whom each hears.
	Disagree bool   `json:"disagree"`
	Reason   string `json:"reason,omitempty"`
	// Agreement is "agree" (every location answered and says the same), "disagree" (the cells
	// differ) or "unknown" (the reachable agree, but a location, unreachable, may not).
	Agreement string `json:"agreement"`
}

// The values of NetworkRow.Agreement.
const (
	AgreementAgree    = "agree"
	AgreementDisagree = "disagree"
	AgreementUnknown  = "unknown"
)

// NetworkCell is one location's verdict of one check, and its availability there.
type NetworkCell struct {
	State   string    `json:"state"`
	Held    bool      `json:"held,omitempty"`
	Since   time.Time `json:"since"`
	Healthy int       `json:"healthy"`
	Fresh   int       `json:"fresh"`
	Stale   int       `json:"stale,omitempty"`
	// Availability24h is the check's healthy share of the last 24 hours as the location
	// observed it (its history), 0 to 1; absent when it observed none of them.
	Availability24h *float64 `json:"availability_24h,omitempty"`
	// Observed24h is how much of those 24 hours the location observed, the time the share is
	// of (two minutes after a start, not a day); absent with Availability24h.
	Observed24h time.Duration `json:"observed_24h_ns,omitempty"`
}
