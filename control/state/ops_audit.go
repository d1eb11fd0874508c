package state

import (
	"encoding/json"
	"sort"
	"time"
)

// The audit log: every accepted write, recorded by the state machine in the same raft entry
// as the write itself (a write the state machine refuses leaves no entry), so it is on
// every voter, in every snapshot, and nobody can write without it.
//
// Retention is per principal (ops_auditlog.go): each principal (the token name or
// certificate that made the write, the original caller when a follower forwarded it) keeps
// its newest MaxAuditPerPrincipal entries, so that one credential writing in a loop pushes
// out only its own entries, never another's. The whole log holds at most MaxAuditEntries
// (when more principals than MaxAuditEntries/MaxAuditPerPrincipal write, the principal
// holding the most entries gives up its oldest) and none older than MaxAuditAge than the
// newest: its size in memory and in a snapshot is bounded as it was before.
//
// Every entry is chained (audit_chain.go): it carries the hash of the entry before it
// (Prev) and its own hash (Hash, SHA-256 over AuditHash's canonical encoding), and every
// entry pruned by retention is counted in its principal's checkpoint. The refusals (writes
// refused, failed authentication) are not here: see refusals.go.

// OpAuditNote records a write made outside the state machine's commands (a voter added to
// or removed from raft's configuration) in the audit log, and changes nothing else.
const OpAuditNote Op = "audit_note"

// Bounds of the audit log.
const (
	// MaxAuditEntries bounds the entries of the whole log.
	MaxAuditEntries = 10000
	// MaxAuditPerPrincipal bounds the entries each principal keeps.
	MaxAuditPerPrincipal = 1000
	// MaxAuditPrincipals bounds the principals kept apart; the writes of principals beyond
	// it share one more retention group, AuditOverflow.
	MaxAuditPrincipals = 64
	// MaxAuditAge bounds the age of an entry, against the newest.
	MaxAuditAge = 90 * 24 * time.Hour
)

// AuditOverflow is the retention group of the principals beyond MaxAuditPrincipals.
const AuditOverflow = "*"

// AuditInfo is who made a write and what it was, as the API that took it stamps it on the
// command.
type AuditInfo struct {
	// Time is when the API took the write, by its voter's clock.
	Time time.Time `json:"time"`
	// Token is the principal that made it: the name of its token, or "cert:" and the
	// common name of its client certificate. For a write a follower forwarded, the
	// principal that authenticated at the follower.
	Token string `json:"token"`
	// Via is the voter that forwarded the write to the leader ("" when the client sent it
	// to the leader itself), as that voter's certificate names it: the leader believes a
	// forwarded principal only from a voter's certificate (forward.go).
	Via string `json:"via,omitempty"`
	// Method and Path are the HTTP request's.
	Method string `json:"method"`
	Path   string `json:"path"`
	// Summary says the change in one line.
	Summary string `json:"summary"`
}

// AuditEntry is one accepted write.
type AuditEntry struct {
	// Seq numbers the entries from 1, without gaps (the log holds those retention kept).
	Seq uint64 `json:"seq"`
	// Index is the raft index of the write.
	Index uint64 `json:"index"`
	// Op is the command.
	Op Op `json:"op"`
	AuditInfo
	// Group is the retention group when it is not the principal (AuditOverflow).
	Group string `json:"group,omitempty"`
	// Prev is the Hash of the entry Seq-1 ("" for the first entry of the chain) and Hash
	// this entry's (AuditHash), both in hex; "" both for entries written before the log was
	// chained.
	Prev string `json:"prev,omitempty"`
	Hash string `json:"hash,omitempty"`
}

// group returns the entry's retention group.
func (e *AuditEntry) group() string {
	if e.Group != "" {
		return e.Group
	}
	return e.Token
}

// audited applies c (which carries its AuditInfo) and records it in the audit log.
func audited(s *State, c *Command, index uint64) (*Edit, error) {
	plain := *c
	plain.Audit = nil
	e, err := ApplyCommand(s, &plain, index)
	if err != nil {
		return nil, err
	}
	o := *e.Next.opsOrEmpty() // its maps are shared, never changed
	o.AuditSeq++
	info := *c.Audit
	info.Time = timeOf(info.Time)
	entry := &AuditEntry{Seq: o.AuditSeq, Index: index, Op: c.Op, AuditInfo: info, Prev: o.Audit.head}
	entry.Hash = AuditHash(entry)
	o.Audit = o.Audit.add(entry)
	e.Next.ops = &o
	return e, nil
}

// Audit returns the newest entries of the audit log, at most limit of them (0: all), oldest
// first, of those with Seq below before (0: from the newest).
func (s *State) Audit(limit int, before uint64) []*AuditEntry {
	return s.opsOrEmpty().Audit.entries(limit, before)
}

// AuditChain returns what a verifier of the audit log needs beside its entries: the Seq
// of the newest entry, its hash, the Seq before the first chained entry and the
// checkpoints of the entries retention pruned.
func (s *State) AuditChain() (newest uint64, head string, chainStart uint64, checkpoints []AuditCheckpoint) {
	o := s.opsOrEmpty()
	return o.AuditSeq, o.Audit.head, o.Audit.chainStart, o.Audit.checkpointList()
}

// opsJSON is the JSON form of opsState: its audit log as a list in order of Seq.
type opsJSON struct {
	Alerts    map[string]*Alert    `json:"alerts,omitempty"`
	Outbox    []*Notification      `json:"outbox,omitempty"`
	Dropped   uint64               `json:"dropped,omitempty"`
	Overrides map[string]*Override `json:"overrides,omitempty"`
	AuditSeq  uint64               `json:"audit_seq,omitempty"`
	Audit     []*AuditEntry        `json:"audit,omitempty"`
	// AuditChain is absent in snapshots written before the log was chained: then the
	// chain starts after the newest entry they hold.
	AuditChain *auditChainJSON `json:"audit_chain,omitempty"`
}

// auditChainJSON is the audit log's chain state in a snapshot.
type auditChainJSON struct {
	Start       uint64            `json:"start"`
	Head        string            `json:"head,omitempty"`
	Checkpoints []AuditCheckpoint `json:"checkpoints,omitempty"`
}

// MarshalJSON writes the operational state with its audit log as a list.
func (o *opsState) MarshalJSON() ([]byte, error) {
	j := opsJSON{Alerts: o.Alerts, Outbox: o.Outbox, Dropped: o.Dropped, Overrides: o.Overrides, AuditSeq: o.AuditSeq}
	j.Audit = o.Audit.entries(0, 0)
	if o.AuditSeq > 0 {
		j.AuditChain = &auditChainJSON{Start: o.Audit.chainStart, Head: o.Audit.head, Checkpoints: o.Audit.checkpointList()}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes, and the form before the log was chained
// (its entries kept, unchained, and the chain starting after them).
func (o *opsState) UnmarshalJSON(b []byte) error {
	var j opsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*o = opsState{Alerts: j.Alerts, Outbox: j.Outbox, Dropped: j.Dropped, Overrides: j.Overrides, AuditSeq: j.AuditSeq}
	entries := make([]*AuditEntry, 0, len(j.Audit))
	for _, a := range j.Audit {
		if a != nil {
			entries = append(entries, a)
		}
	}
	sort.SliceStable(entries, func(a, b int) bool { return entries[a].Seq < entries[b].Seq })
	chain := j.AuditChain
	if chain == nil {
		chain = &auditChainJSON{Start: j.AuditSeq}
	}
	o.Audit = loadAuditStore(entries, chain.Start, chain.Head, chain.Checkpoints)
	return nil
}

// AuditRetained returns the number of audit entries the state retains.
func (s *State) AuditRetained() int { return s.opsOrEmpty().Audit.Len() }
