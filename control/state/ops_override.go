package state

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Maintenance overrides: a check forced healthy or unhealthy, or a record drained (served
// only in last resort), each with a reason, an author and an expiry. Every location applies
// them by its own clock, and they reach it as part of the state (Delta.Overrides).
const (
	// OpSetOverride puts an override in place (replacing one of the same target).
	OpSetOverride Op = "set_override"
	// OpClearOverride removes the override ID names.
	OpClearOverride Op = "clear_override"
)

// Bounds of overrides.
const (
	// MaxOverrides bounds the overrides in place.
	MaxOverrides = 1000
	// MaxOverrideFor bounds an override's life.
	MaxOverrideFor = 30 * 24 * time.Hour
	maxReason      = 512
)

// OverrideID returns the ID of the override of a check (zone empty) or of a record.
func OverrideID(check, zone, name string, typ config.RecordType, value string) string {
	var target string
	if zone == "" {
		target = "check\x00" + check
	} else {
		apex := CanonicalZone(zone)
		target = "record\x00" + apex + "\x00" + CanonicalOwner(apex, name) + "\x00" + strings.ToUpper(string(typ)) + "\x00" + value
	}
	sum := sha256.Sum256([]byte(target))
	return hex.EncodeToString(sum[:6])
}

// RecordTypeOf returns a record type as the control plane names it (upper case).
func RecordTypeOf(s string) config.RecordType { return config.RecordType(strings.ToUpper(s)) }

// applySetOverride puts c.Override in place at index; pure.
func applySetOverride(s *State, c *Command, index uint64) (*Edit, error) {
	o := c.Override
	if o == nil {
		return nil, errors.New("control: set_override needs an override")
	}
	next := *o
	next.Created, next.Expires = timeOf(o.Created), timeOf(o.Expires)
	if err := s.checkOverride(&next); err != nil {
		return nil, err
	}
	ops := cloneOps(s.opsOrEmpty())
	ops.pruneOverrides(next.Created)
	if _, ok := ops.Overrides[next.ID]; !ok && len(ops.Overrides) >= MaxOverrides {
		return nil, fmt.Errorf("control: %d overrides are in place, the most: clear one first", MaxOverrides)
	}
	ops.Overrides[next.ID] = &next
	e := s.Edit(index)
	e.Next.ops = ops
	e.overrides = true
	return e, nil
}

// checkOverride validates an override and fills its ID and canonical names.
func (s *State) checkOverride(o *Override) error {
	var es config.Errors
	switch o.Kind {
	case OverrideHealthy, OverrideUnhealthy:
		if _, ok := s.checks.Get(o.Check); !ok {
			return fmt.Errorf("control: check %q: %w", o.Check, ErrNotFound)
		}
		o.Zone, o.Name, o.Type, o.Value = "", "", "", ""
		o.ID = OverrideID(o.Check, "", "", "", "")
	case OverrideDrain:
		apex := CanonicalZone(o.Zone)
		owner := CanonicalOwner(apex, o.Name)
		typ := config.RecordType(strings.ToUpper(string(o.Type)))
		rs, ok := s.sets.Get(setKey(apex, owner, typ))
		if !ok {
			return fmt.Errorf("control: record set %s %s in zone %q: %w", o.Name, o.Type, o.Zone, ErrNotFound)
		}
		if !slices.ContainsFunc(rs.Records, func(r config.Record) bool { return r.Value == o.Value }) {
			return fmt.Errorf("control: record %q of %s %s: %w", o.Value, owner, typ, ErrNotFound)
		}
		o.Check, o.Zone, o.Name, o.Type = "", apex, owner, typ
		o.ID = OverrideID("", apex, owner, typ, o.Value)
	default:
		es = append(es, config.FieldError{Path: "kind", Message: fmt.Sprintf("unknown kind %q: want healthy, unhealthy or drain", o.Kind)})
	}
	if strings.TrimSpace(o.Reason) == "" || len(o.Reason) > maxReason {
		es = append(es, config.FieldError{Path: "reason", Message: fmt.Sprintf("required, at most %d bytes", maxReason)})
	}
	if d := o.Expires.Sub(o.Created); d <= 0 || d > MaxOverrideFor {
		es = append(es, config.FieldError{Path: "expires", Message: fmt.Sprintf("must be after the override is set and within %v of it", MaxOverrideFor)})
	}
	if len(es) > 0 {
		return es
	}
	return nil
}

// applyClearOverride removes the override c.ID names; pure.
func applyClearOverride(s *State, c *Command, index uint64) (*Edit, error) {
	if _, ok := s.opsOrEmpty().Overrides[c.ID]; !ok {
		return nil, fmt.Errorf("control: override %q: %w", c.ID, ErrNotFound)
	}
	ops := cloneOps(s.opsOrEmpty())
	delete(ops.Overrides, c.ID)
	e := s.Edit(index)
	e.Next.ops = ops
	e.overrides = true
	return e, nil
}

// pruneOverrides forgets the overrides that ended before now.
func (o *opsState) pruneOverrides(now time.Time) {
	maps.DeleteFunc(o.Overrides, func(_ string, ov *Override) bool { return !ov.Active(now) })
}

// Overrides returns the overrides the state holds (some may have ended: each is in force
// until its Expires), sorted by ID; the caller must not change them.
func (s *State) Overrides() []*Override {
	m := s.opsOrEmpty().Overrides
	out := make([]*Override, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[id])
	}
	return out
}

// OverrideList carries the overrides in a Delta when they changed.
type OverrideList struct {
	// Items are every override of the state, sorted by ID.
	Items []*Override `json:"items"`
}

// setOverrides puts a delta's overrides in place.
func (e *Edit) setOverrides(l *OverrideList) {
	ops := cloneOps(e.Next.opsOrEmpty())
	ops.Overrides = make(map[string]*Override, len(l.Items))
	for _, o := range l.Items {
		if o != nil {
			ops.Overrides[o.ID] = o
		}
	}
	e.Next.ops = ops
	e.overrides = true
}

// Override returns the override with id, in force or not.
func (s *State) Override(id string) (*Override, bool) {
	o, ok := s.opsOrEmpty().Overrides[id]
	return o, ok
}
