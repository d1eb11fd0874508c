package state

import (
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/internal/safetext"
)

// TSIGKeyRequest is the body of PUT /v1/tsig-keys/{name}.
type TSIGKeyRequest struct {
	// Algorithm is hmac-sha256 (the default), hmac-sha384 or hmac-sha512.
	Algorithm string `json:"algorithm,omitempty"`
	// Secret is the key, base64 of at least 16 bytes (tsig-keygen's or keymgr -t's output).
	Secret string `json:"secret"`
}

// TSIGKeyView is a TSIG key as GET /v1/tsig-keys shows it: never its secret.
type TSIGKeyView struct {
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"`
	// Secret is "(set)": the secret is write-only.
	Secret string `json:"secret"`
}

// RolloverRequest asks for a key rollover of one zone.
type RolloverRequest struct {
	// Role is the key rolled: csk, ksk or zsk.
	Role dnssec.Role `json:"role"`
	// Finish ends a KSK or CSK rollover: the old key stops signing and is removed later. It
	// is refused (409) before the rollover's earliest finish: its start plus the DNSKEY TTL,
	// the zone's largest TTL (at least two days, the parent's DS TTL included) and a margin.
	Finish bool `json:"finish,omitempty"`
	// Force, with Finish, finishes before the earliest finish: resolvers that still hold the
	// old DS or a DNSKEY set without the new key fail to validate the zone. The audit log
	// records it.
	Force bool `json:"force,omitempty"`
}

// ErrorBody is the JSON of every error the API answers.
type ErrorBody struct {
	// Error says what went wrong.
	Error string `json:"error"`
	// Errors lists every problem of an invalid document, with its path.
	Errors config.Errors `json:"errors,omitempty"`
}

// ReadMeta is what every read says about where its data comes from.
type ReadMeta struct {
	// Index is the raft index of the state read.
	Index uint64 `json:"index"`
	// Stale is true when the voter that answered is not the leader and has not heard from
	// one recently (as on the minority side of a partition): the data may be out of date.
	Stale bool `json:"stale"`
	// Consistent is true for a linearizable read (?consistent), confirmed by the leader.
	Consistent bool `json:"consistent,omitempty"`
	// KnownLeader is true when the voter knows a leader.
	KnownLeader bool `json:"known_leader"`
}

// ZoneView is a zone as the API shows it: the zone and its name-server shard.
type ZoneView struct {
	config.Zone
	// Shard is the zone's name-server numbers from the stateful allocator, if any.
	Shard []int `json:"shard,omitempty"`
}

// ChangesView is the answer of GET /v1/changes: what changed after the index asked, or,
// when this voter's change log does not reach back that far, the whole state.
type ChangesView struct {
	// Full is true when State holds the whole state instead of a Delta.
	Full bool `json:"full"`
	// Delta is what changed, when Full is false.
	Delta *Delta `json:"delta,omitempty"`
}

// ClusterView is the cluster as one voter sees it.
type ClusterView struct {
	// ID is the answering voter.
	ID string `json:"id"`
	// Leader is the leader's raft ID, empty when none is known.
	Leader string `json:"leader"`
	// Servers maps each voter's raft ID to its raft address.
	Servers map[string]string `json:"servers"`
	// APIs maps each voter's raft ID to its API URL.
	APIs map[string]string `json:"apis"`
	// Ready is false while the voter replays its log after a restart.
	Ready bool `json:"ready"`
	// Raft holds raft's own statistics of the answering voter.
	Raft map[string]string `json:"raft"`
}

// WriteResult is the answer to a successful write.
type WriteResult struct {
	// Index is the raft index the write produced; a blocking read with ?index=Index-1
	// returns a state that includes it.
	Index uint64 `json:"index"`
}

// JoinRequest asks the cluster to add a voter.
type JoinRequest struct {
	// ID is the new voter's raft ID.
	ID string `json:"id"`
	// RaftAddress is the address of its raft transport.
	RaftAddress string `json:"raft_address"`
	// API is the base URL of its HTTP API.
	API string `json:"api"`
}

// DNSSECView is a zone's signing as GET /v1/zones/{zone}/dnssec shows it: public halves
// only; a private key never leaves the state, and then only sealed.
type DNSSECView struct {
	// Zone is the apex.
	Zone string `json:"zone"`
	// Enabled says the configuration signs the zone.
	Enabled bool `json:"enabled"`
	// DNSKEYTTL is the TTL of the DNSKEY record set.
	DNSKEYTTL uint32 `json:"dnskey_ttl"`
	// Denial is how the zone proves that a name or type does not exist: config.DenialCompact
	// (an NSEC made for each name denied) or config.DenialNSEC (the zone's NSEC chain).
	Denial string `json:"denial"`
	// DS are the DS records (SHA-256) of the published key-signing keys (KSK or CSK), as the
	// parent zone should serve them.
	DS []string `json:"ds"`
	// Keys are the zone's keys, oldest first.
	Keys []DNSSECKeyView `json:"keys"`
}

// DNSSECKeyView is one key of a DNSSECView.
type DNSSECKeyView struct {
	Tag   uint16      `json:"tag"`
	Role  dnssec.Role `json:"role"`
	State string      `json:"state"`
	// DNSKEY is the key's DNSKEY record in presentation form.
	DNSKEY string `json:"dnskey"`
	// DS is the key's DS record (SHA-256), for a KSK or CSK.
	DS string `json:"ds,omitempty"`
	// Publish, Activate, Retire and Remove are the key's timeline (RFC 3339); Retire and
	// Remove are absent while unset.
	Publish  time.Time  `json:"publish"`
	Activate time.Time  `json:"activate"`
	Retire   *time.Time `json:"retire,omitempty"`
	Remove   *time.Time `json:"remove,omitempty"`
	// FinishAfter, on the new key of a KSK or CSK rollover in progress, is the earliest time
	// the rollover may be finished without force (RFC 3339).
	FinishAfter *time.Time `json:"finish_after,omitempty"`
}

// AlertsView is GET /v1/alerts: the alerts that fire and the notifications waiting for
// delivery.
type AlertsView struct {
	// Firing are the alerts that fire, by key.
	Firing []*Alert `json:"firing"`
	// Outbox are the notifications not yet taken by every receiver, oldest first.
	Outbox []*Notification `json:"outbox"`
	// Dropped counts the notifications a full outbox dropped.
	Dropped uint64 `json:"dropped"`
}

// OverrideRequest is the body of POST /v1/overrides.
type OverrideRequest struct {
	// Kind is healthy or unhealthy (with Check), or drain (with Zone, Name, Type, Value).
	Kind  string `json:"kind"`
	Check string `json:"check,omitempty"`
	Zone  string `json:"zone,omitempty"`
	Name  string `json:"name,omitempty"`
	Type  string `json:"type,omitempty"`
	Value string `json:"value,omitempty"`
	// Reason says why (required).
	Reason string `json:"reason"`
	// For is how long it lasts, e.g. "2h"; or Expires, when it ends.
	For     string    `json:"for,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
}

// TextProblems lists the fields of the request that hold characters free text may not
// (safetext.Check): control characters, line separators, bidirectional overrides.
func (req *OverrideRequest) TextProblems() config.Errors {
	var es config.Errors
	for _, f := range []struct{ path, text string }{{"kind", req.Kind}, {"check", req.Check}, {"zone", req.Zone},
		{"name", req.Name}, {"type", req.Type}, {"value", req.Value}, {"reason", req.Reason}, {"for", req.For}} {
		if err := safetext.Check(f.text); err != nil {
			es = append(es, config.FieldError{Path: f.path, Message: err.Error()})
		}
	}
	return es
}

// OverrideView is an override as the API lists it.
type OverrideView struct {
	*Override
	// Active says it is in force now, by the answering voter's clock.
	Active bool `json:"active"`
}

// AuditView is GET /v1/audit: a page of the audit log, oldest first, and what a verifier
// of its hash chain needs (VerifyAudit): with limit=MaxAuditEntries the page is the whole
// log, read from one state.
type AuditView struct {
	// Entries are the entries, oldest first.
	Entries []*AuditEntry `json:"entries"`
	// Newest is the Seq of the newest entry of the log, and Head its Hash.
	Newest uint64 `json:"newest"`
	Head   string `json:"head,omitempty"`
	// Retained is how many entries the whole log holds.
	Retained int `json:"retained"`
	// ChainStart is the Seq before the first chained entry: entries up to it were written
	// before the log was chained and carry no hashes.
	ChainStart uint64 `json:"chain_start"`
	// Checkpoints account for the chained entries retention pruned, by retention group.
	Checkpoints []AuditCheckpoint `json:"checkpoints,omitempty"`
}

// RefusalEntry is one refused request, or a summary of those suppressed.
type RefusalEntry struct {
	// Seq numbers the voter's refusals from 1 since it started.
	Seq uint64 `json:"seq"`
	// Time is when the voter refused it.
	Time time.Time `json:"time"`
	// Code is the HTTP status answered (401, 403, 422).
	Code int `json:"code,omitempty"`
	// Principal is the token's name when a token or certificate matched, else "unknown
	// token", "no credentials" or "unverified certificate"; Via the voter that forwarded it.
	Principal string `json:"principal"`
	Via       string `json:"via,omitempty"`
	// Source is the client's address, and Network its /24 or /56.
	Source  string `json:"source"`
	Network string `json:"network"`
	// Method and Path are the request's.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Reason is the error answered, at most 200 bytes.
	Reason string `json:"reason,omitempty"`
	// Suppressed, in a summary entry, counts the refusals of Network and Principal that were
	// not recorded since Since.
	Suppressed uint64    `json:"suppressed,omitempty"`
	Since      time.Time `json:"since,omitzero"`
}

// RefusalsView is GET /v1/audit/refusals: what one voter refused.
type RefusalsView struct {
	// Voter is the voter that answered: each records its own refusals.
	Voter string `json:"voter"`
	// Known are the refusals of credentials that matched, Unknown those of requests
	// without one, each oldest first.
	Known   []*RefusalEntry `json:"known"`
	Unknown []*RefusalEntry `json:"unknown"`
	// Pending are summaries of refusals suppressed and not yet summarized in the log.
	Pending []*RefusalEntry `json:"pending,omitempty"`
	// Recorded counts the refusals recorded since the voter started, Suppressed those
	// counted only, Dropped the entries pushed out of the log by newer ones.
	Recorded, Suppressed, Dropped uint64
}
