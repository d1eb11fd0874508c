package state

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// The operational state: what the control plane stores beside the configuration and that
// no document holds. Notification alerts and their outbox (ops_notify.go), maintenance
// overrides (ops_override.go) and the audit log (ops_audit.go). It is small and bounded,
// copied whole by a command that changes it (never by one that changes the configuration
// only), and written into snapshots beside the document.

// opsState is the operational state of one State. It is never changed once published.
type opsState struct {
	// Alerts are the alerts that fire, by alert key (see AlertKey).
	Alerts map[string]*Alert `json:"alerts,omitempty"`
	// Outbox holds the notifications decided and not yet delivered to every receiver, in
	// the order they were decided.
	Outbox []*Notification `json:"outbox,omitempty"`
	// Dropped counts the notifications dropped: from a full outbox, or of alerts beyond
	// MaxAlerts.
	Dropped uint64 `json:"dropped,omitempty"`
	// Overrides are the maintenance overrides, by ID (ops_override.go).
	Overrides map[string]*Override `json:"overrides,omitempty"`
	// Audit is the audit log, oldest first; AuditSeq the Seq of its newest entry
	// (ops_audit.go, ops_auditlog.go).
	Audit    auditStore
	AuditSeq uint64
}

// ops returns the state's operational state, never nil.
func (s *State) opsOrEmpty() *opsState {
	if s.ops == nil {
		return &opsState{}
	}
	return s.ops
}

// cloneOps returns a copy of o that a command may change: maps and lists are new, their
// items shared (an item is replaced, never changed).
func cloneOps(o *opsState) *opsState {
	c := *o
	c.Alerts = maps.Clone(o.Alerts)
	if c.Alerts == nil {
		c.Alerts = map[string]*Alert{}
	}
	c.Outbox = slices.Clone(o.Outbox)
	c.Overrides = maps.Clone(o.Overrides)
	if c.Overrides == nil {
		c.Overrides = map[string]*Override{}
	}
	return &c
}

// opsEmpty reports whether o holds nothing worth writing.
func opsEmpty(o *opsState) bool {
	return o == nil || (len(o.Alerts) == 0 && len(o.Outbox) == 0 && o.Dropped == 0 && len(o.Overrides) == 0 && o.AuditSeq == 0)
}

// readOps reads the operational state of a snapshot.
func readOps(raw json.RawMessage) (*opsState, error) {
	var o opsState
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// timeOf is a command's time, as its author stamped it: every voter applies the same.
func timeOf(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// applyOps applies a command that changes the operational state only; ok is false for any
// other command.
func applyOps(s *State, c *Command, index uint64) (e *Edit, ok bool, err error) {
	switch c.Op {
	case OpNotify:
		e, err = applyNotify(s, c, index)
		return e, true, err
	case OpSetOverride:
		e, err = applySetOverride(s, c, index)
		return e, true, err
	case OpClearOverride:
		e, err = applyClearOverride(s, c, index)
		return e, true, err
	case OpPutTSIGKey, OpDeleteTSIGKey:
		e, err = applyTSIG(s, c, index)
		return e, true, err
	case OpAuditNote:
		return s.Edit(index), true, nil // what it records, audited records
	case OpPutNotifications:
		n, err := c.Notifications.KeepSecrets(s.settings.Notifications)
		if err != nil {
			return nil, true, validationError(err)
		}
		if n != nil {
			if err := validationError(n.Validate()); err != nil {
				return nil, true, err
			}
		}
		e = s.Edit(index)
		d := s.Settings()
		d.Notifications = n
		e.SetSettings(&d)
		return e, true, nil
	}
	return nil, false, nil
}

// ForReaders returns s as the API streams it whole (GET /v1/state, a full GET /v1/changes,
// GET /v1/document) and as a data-plane node keeps it on disk: of the operational state,
// only the overrides, which the data plane applies; the alerts, the outbox and the audit log
// stay with the voters (GET /v1/alerts, GET /v1/audit) and in their snapshots. The
// notifications' secrets are redacted (config.Notifications.Redacted): only the voters,
// whose leader delivers, hold them.
func (s *State) ForReaders() *State {
	trimOps := s.ops != nil && (len(s.ops.Alerts) > 0 || len(s.ops.Outbox) > 0 || s.ops.AuditSeq > 0 || s.ops.Dropped > 0)
	redact := s.settings.Notifications.HasSecrets()
	if !trimOps && !redact {
		return s
	}
	c := *s
	if trimOps {
		c.ops = &opsState{Overrides: s.ops.Overrides}
	}
	if redact {
		c.settings.Notifications = s.settings.Notifications.Redacted()
	}
	return &c
}
