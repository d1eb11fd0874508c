package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// Op names what a command does.
type Op string

// The commands of the state machine.
const (
	OpPutCheck        Op = "put_check"
	OpDeleteCheck     Op = "delete_check"
	OpPutZone         Op = "put_zone"
	OpDeleteZone      Op = "delete_zone"
	OpPutRecordSet    Op = "put_record_set"
	OpDeleteRecordSet Op = "delete_record_set"
	OpApplyDocument   Op = "apply_document"
	OpPutVoter        Op = "put_voter"
	OpDeleteVoter     Op = "delete_voter"
	// OpPutZoneKeys stores a zone's DNSSEC keys (dnssec.go).
	OpPutZoneKeys Op = "put_zone_keys"
	// OpPutTSIGKey stores a TSIG key of transfers, its secret sealed; OpDeleteTSIGKey
	// removes the one ID names (tsig.go).
	OpPutTSIGKey    Op = "put_tsig_key"
	OpDeleteTSIGKey Op = "delete_tsig_key"
	// OpBatch carries independent commands committed as one raft entry: each is applied on
	// the state the one before it made, and succeeds or fails on its own.
	OpBatch Op = "batch"
)

// Command is one typed change of the state, as the raft log carries it (JSON).
type Command struct {
	// Op is what the command does.
	Op Op `json:"op"`
	// Create makes a put fail with ErrConflict when the item already exists.
	Create bool `json:"create,omitempty"`
	// Check is the check a put_check stores.
	Check *config.Check `json:"check,omitempty"`
	// Zone is the zone a put_zone stores, with its record sets.
	Zone *config.Zone `json:"zone,omitempty"`
	// RecordSet is the record set a put_record_set stores in ZoneName.
	RecordSet *config.RecordSet `json:"record_set,omitempty"`
	// Document is the whole configuration an apply_document puts in place.
	Document *config.Document `json:"document,omitempty"`
	// Voter is the voter a put_voter records.
	Voter *Voter `json:"voter,omitempty"`
	// ID names the check or voter a delete removes.
	ID string `json:"id,omitempty"`
	// ZoneName names the zone of a record-set command, or the zone a delete_zone removes.
	ZoneName string `json:"zone_name,omitempty"`
	// Name and Type name the record set a delete_record_set removes.
	Name string            `json:"name,omitempty"`
	Type config.RecordType `json:"type,omitempty"`
	// ZoneKeys are the keys a put_zone_keys stores, private halves sealed.
	ZoneKeys *dnssec.ZoneKeys `json:"zone_keys,omitempty"`
	// TSIGKey is the key a put_tsig_key stores, its secret sealed.
	TSIGKey *StoredTSIGKey `json:"tsig_key,omitempty"`
	// Batch holds the commands of a batch, as each was encoded alone.
	Batch []json.RawMessage `json:"batch,omitempty"`
	// Notify is what the notification sender decided (OpNotify, ops_notify.go).
	Notify *NotifyCommand `json:"notify,omitempty"`
	// Audit says who made the write and what it was; the state machine records it in the
	// audit log when it applies the command (ops_audit.go).
	Audit *AuditInfo `json:"audit,omitempty"`
	// Override is the override an OpSetOverride puts in place (ops_override.go).
	Override *Override `json:"override,omitempty"`
	// Notifications are the receivers and rules an OpPutNotifications puts in place (nil:
	// none).
	Notifications *config.Notifications `json:"notifications,omitempty"`
}

// Voter is a control node: its raft ID and the base URL of its HTTP API.
type Voter struct {
	// ID is the raft server ID.
	ID string `json:"id"`
	// API is the base URL of the voter's HTTP API, e.g. "http://127.0.0.1:7100".
	API string `json:"api"`
}

// ValidationError is a command whose resulting document does not validate.
type ValidationError struct {
	// Errors lists every problem of the resulting document.
	Errors config.Errors
}

// Error says that the command was rejected and why.
func (e *ValidationError) Error() string {
	return "control: the resulting configuration is invalid, nothing was applied:\n" + e.Errors.Error()
}

// ApplyCommand returns the edit that c makes of s at index: its state and what it changed.
// It is a pure function: s is not changed, and the same inputs give the same result on every
// voter. It costs what the command changes (a whole document is validated whole). The
// name-server shards are not touched: the state machine reconciles them with its allocator.
func ApplyCommand(s *State, c *Command, index uint64) (*Edit, error) {
	if c.Audit != nil {
		return audited(s, c, index)
	}
	if e, ok, err := applyOps(s, c, index); ok {
		return e, err
	}
	e := s.Edit(index)
	switch c.Op {
	case OpPutVoter:
		if c.Voter == nil || c.Voter.ID == "" {
			return nil, errors.New("control: put_voter needs a voter with an id")
		}
		e.setVoter(c.Voter.ID, c.Voter.API, false)
		return e, nil
	case OpDeleteVoter:
		if _, ok := s.Voters[c.ID]; !ok {
			return nil, fmt.Errorf("control: voter %q: %w", c.ID, ErrNotFound)
		}
		e.setVoter(c.ID, "", true)
		return e, nil
	case OpApplyDocument:
		if c.Document == nil {
			return nil, errors.New("control: apply_document needs a document")
		}
		doc := c.Document
		if doc.Notifications != nil {
			n, err := doc.Notifications.KeepSecrets(s.settings.Notifications)
			if err != nil {
				return nil, validationError(err)
			}
			d := *doc
			d.Notifications = n
			doc = &d
		}
		if err := validationError(doc.Validate()); err != nil {
			return nil, err
		}
		e.applyDocument(doc)
		e.stampSerials(uint32(index))
		return e, nil
	}
	if err := e.applyItem(c); err != nil {
		return nil, err
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	e.stampSerials(uint32(index))
	return e, nil
}

// applyItem applies a command that changes one check, zone or record set.
func (e *Edit) applyItem(c *Command) error {
	switch c.Op {
	case OpPutZoneKeys:
		return e.putZoneKeys(c)
	case OpPutCheck:
		if c.Check == nil {
			return errors.New("control: put_check needs a check")
		}
		if _, ok := e.Next.checks.Get(c.Check.ID); ok && c.Create {
			return fmt.Errorf("control: check %q: %w", c.Check.ID, ErrConflict)
		}
		ch := *c.Check
		e.PutCheck(&ch)
	case OpDeleteCheck:
		if !e.deleteCheck(c.ID) {
			return fmt.Errorf("control: check %q: %w", c.ID, ErrNotFound)
		}
	case OpPutZone:
		if c.Zone == nil {
			return errors.New("control: put_zone needs a zone")
		}
		if _, ok := e.Next.zones.Get(CanonicalZone(c.Zone.Name)); ok && c.Create {
			return fmt.Errorf("control: zone %q: %w", c.Zone.Name, ErrConflict)
		}
		// As written, before its record sets are stored by name and type (where two sets
		// of one name and type would be one).
		if err := validationError(e.Next.settings.ValidateZone(c.Zone, e.hasCheck)); err != nil {
			return err
		}
		e.putZone(c.Zone)
	case OpDeleteZone:
		if !e.deleteZone(CanonicalZone(c.ZoneName)) {
			return fmt.Errorf("control: zone %q: %w", c.ZoneName, ErrNotFound)
		}
	case OpPutRecordSet, OpDeleteRecordSet:
		apex := CanonicalZone(c.ZoneName)
		if _, ok := e.Next.zones.Get(apex); !ok {
			return fmt.Errorf("control: zone %q: %w", c.ZoneName, ErrNotFound)
		}
		if c.Op == OpDeleteRecordSet {
			typ := config.RecordType(strings.ToUpper(string(c.Type)))
			if !e.deleteSet(setKey(apex, CanonicalOwner(apex, c.Name), typ)) {
				return fmt.Errorf("control: record set %s %s in zone %q: %w", c.Name, c.Type, c.ZoneName, ErrNotFound)
			}
			return nil
		}
		if c.RecordSet == nil {
			return errors.New("control: put_record_set needs a record set")
		}
		rs := *c.RecordSet
		if _, ok := e.Next.sets.Get(setKey(apex, CanonicalOwner(apex, rs.Name), rs.Type)); ok && c.Create {
			return fmt.Errorf("control: record set %s %s: %w", rs.Name, rs.Type, ErrConflict)
		}
		e.putSet(apex, &rs)
	default:
		return fmt.Errorf("control: unknown command %q", c.Op)
	}
	return nil
}

// applyDocument makes the state hold d, a valid document, and nothing else: every check,
// zone and record set that differs is put, every one that d lacks is deleted, and the others
// are left as they were (their serials too).
func (e *Edit) applyDocument(d *config.Document) {
	e.prefixed = true
	e.SetSettings(d)
	keep := make(map[string]bool, len(d.Checks))
	for i := range d.Checks {
		c := &d.Checks[i]
		keep[c.ID] = true
		if old, ok := e.Next.CheckRef(c.ID); !ok || !reflect.DeepEqual(old, c) {
			cc := *c
			e.PutCheck(&cc)
		}
	}
	var gone []string
	for id := range e.Next.checks.All("") {
		if !keep[id] {
			gone = append(gone, id)
		}
	}
	for _, id := range gone {
		e.deleteCheck(id)
	}
	zones := make(map[string]bool, len(d.Zones))
	for i := range d.Zones {
		z := &d.Zones[i]
		apex := CanonicalZone(z.Name)
		zones[apex] = true
		e.syncZone(apex, z)
	}
	gone = gone[:0]
	for apex := range e.Next.zones.All("") {
		if !zones[apex] {
			gone = append(gone, apex)
		}
	}
	for _, apex := range gone {
		e.deleteZone(apex)
	}
}

// syncZone makes the zone apex equal to z, changing only what differs.
func (e *Edit) syncZone(apex string, z *config.Zone) {
	head := *z
	head.RecordSets = nil
	if old, ok := e.Next.zones.Get(apex); ok {
		cmp := *old
		cmp.SOA.Serial = head.SOA.Serial
		if !reflect.DeepEqual(&cmp, &head) {
			e.putZoneHead(&head)
		}
	} else {
		e.putZoneHead(&head)
	}
	keep := make(map[string]bool, len(z.RecordSets))
	for i := range z.RecordSets {
		rs := &z.RecordSets[i]
		k := setKey(apex, CanonicalOwner(apex, rs.Name), rs.Type)
		keep[k] = true
		if old, ok := e.Next.sets.Get(k); !ok || !reflect.DeepEqual(old, rs) {
			r := *rs
			e.putSet(apex, &r)
		}
	}
	var gone []string
	for k := range e.Next.sets.Prefix(zonePrefix(apex)) {
		if !keep[k] {
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		e.deleteSet(k)
	}
}

// IsEmpty reports whether every field of c is at its zero value.
func (c *Command) IsEmpty() bool {
	return c.Op == "" && !c.Create && c.Check == nil && c.Zone == nil && c.RecordSet == nil &&
		c.Document == nil && c.Voter == nil && c.ID == "" && c.ZoneName == "" && c.Name == "" &&
		c.Type == "" && c.ZoneKeys == nil && c.TSIGKey == nil && c.Batch == nil && c.Notify == nil &&
		c.Audit == nil && c.Override == nil && c.Notifications == nil
}
