package control

import (
	"encoding/json"
	"time"
)

// The audit log: every accepted write, recorded by the state machine in the same raft entry
// as the write itself (a write the state machine refuses leaves no entry), so it is on
// every voter, in every snapshot, and nobody can write without it. It holds at most
// MaxAuditEntries entries and none older than MaxAuditAge than the newest.

// OpAuditNote records a write made outside the state machine's commands (a voter added to
// or removed from raft's configuration) in the audit log, and changes nothing else.
const OpAuditNote Op = "audit_note"

// Bounds of the audit log.
const (
	MaxAuditEntries = 10000
	MaxAuditAge     = 90 * 24 * time.Hour
)

// AuditInfo is who made a write and what it was, as the API that took it stamps it on the
// command.
type AuditInfo struct {
	// Time is when the API took the write, by its voter's clock.
	Time time.Time `json:"time"`
	// Token is the name of the token that made it.
	Token string `json:"token"`
	// Method and Path are the HTTP request's.
	Method string `json:"method"`
	Path   string `json:"path"`
	// Summary says the change in one line.
	Summary string `json:"summary"`
}

// AuditEntry is one accepted write.
type AuditEntry struct {
	// Seq numbers the entries from 1, without gaps.
	Seq uint64 `json:"seq"`
	// Index is the raft index of the write.
	Index uint64 `json:"index"`
	// Op is the command.
	Op Op `json:"op"`
	AuditInfo
}

// audited applies c (which carries its AuditInfo) and records it in the audit log.
func audited(s *State, c *Command, index uint64) (*edit, error) {
	plain := *c
	plain.Audit = nil
	e, err := applyCommand(s, &plain, index)
	if err != nil {
		return nil, err
	}
	o := *e.s.opsOrEmpty() // its maps are shared, never changed
	o.AuditSeq++
	info := *c.Audit
	info.Time = timeOf(info.Time)
	o.Audit = o.Audit.push(&AuditEntry{Seq: o.AuditSeq, Index: index, Op: c.Op, AuditInfo: info})
	for o.Audit.Len() > MaxAuditEntries || info.Time.Sub(o.Audit.at(0).Time) > MaxAuditAge {
		o.Audit = o.Audit.pop()
	}
	e.s.ops = &o
	return e, nil
}

// Audit returns the newest entries of the audit log, at most limit of them, oldest first,
// of those with Seq below before (0: from the newest).
func (s *State) Audit(limit int, before uint64) []*AuditEntry {
	o := s.opsOrEmpty()
	last := o.AuditSeq
	if before > 0 && before <= last {
		last = before - 1
	}
	from := uint64(1)
	if limit > 0 && last >= uint64(limit) {
		from = last - uint64(limit) + 1
	}
	out := []*AuditEntry{}
	n := o.Audit.Len()
	if n == 0 {
		return out
	}
	first := o.Audit.at(0).Seq // entries are numbered without gaps
	for seq := max(from, first); seq <= last && seq-first < uint64(n); seq++ {
		out = append(out, o.Audit.at(int(seq-first)))
	}
	return out
}

// opsJSON is the JSON form of opsState: its audit log as a list.
type opsJSON struct {
	Alerts    map[string]*Alert    `json:"alerts,omitempty"`
	Outbox    []*Notification      `json:"outbox,omitempty"`
	Dropped   uint64               `json:"dropped,omitempty"`
	Overrides map[string]*Override `json:"overrides,omitempty"`
	AuditSeq  uint64               `json:"audit_seq,omitempty"`
	Audit     []*AuditEntry        `json:"audit,omitempty"`
}

// MarshalJSON writes the operational state with its audit log as a list.
func (o *opsState) MarshalJSON() ([]byte, error) {
	j := opsJSON{Alerts: o.Alerts, Outbox: o.Outbox, Dropped: o.Dropped, Overrides: o.Overrides, AuditSeq: o.AuditSeq}
	for i := range o.Audit.Len() {
		j.Audit = append(j.Audit, o.Audit.at(i))
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *opsState) UnmarshalJSON(b []byte) error {
	var j opsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*o = opsState{Alerts: j.Alerts, Outbox: j.Outbox, Dropped: j.Dropped, Overrides: j.Overrides, AuditSeq: j.AuditSeq}
	for _, a := range j.Audit {
		if a != nil {
			o.Audit = o.Audit.push(a)
		}
	}
	return nil
}
