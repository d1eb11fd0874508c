package control

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/vigil-dns/vigil/config"
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

// applyCommand returns the state that c produces from s at index. It is a pure function:
// s is not changed, and the same inputs give the same result on every voter. The name-server
// shards are not touched: the state machine reconciles them with its allocator.
func applyCommand(s *State, c *Command, index uint64) (*State, error) {
	next := s.clone()
	next.Index = index
	doc := &next.Document
	serial := uint32(index)
	switch c.Op {
	case OpPutVoter:
		if c.Voter == nil || c.Voter.ID == "" {
			return nil, errors.New("control: put_voter needs a voter with an id")
		}
		next.Voters[c.Voter.ID] = c.Voter.API
		return next, nil
	case OpDeleteVoter:
		if _, ok := next.Voters[c.ID]; !ok {
			return nil, fmt.Errorf("control: voter %q: %w", c.ID, ErrNotFound)
		}
		delete(next.Voters, c.ID)
		return next, nil
	case OpPutCheck:
		if c.Check == nil {
			return nil, errors.New("control: put_check needs a check")
		}
		i := findCheck(doc.Checks, c.Check.ID)
		doc.Checks = slices.Clone(doc.Checks)
		switch {
		case i >= 0 && c.Create:
			return nil, fmt.Errorf("control: check %q: %w", c.Check.ID, ErrConflict)
		case i >= 0:
			doc.Checks[i] = *c.Check
		default:
			doc.Checks = append(doc.Checks, *c.Check)
		}
	case OpDeleteCheck:
		i := findCheck(doc.Checks, c.ID)
		if i < 0 {
			return nil, fmt.Errorf("control: check %q: %w", c.ID, ErrNotFound)
		}
		doc.Checks = slices.Delete(slices.Clone(doc.Checks), i, i+1)
	case OpPutZone:
		if c.Zone == nil {
			return nil, errors.New("control: put_zone needs a zone")
		}
		z := *c.Zone
		z.SOA.Serial = serial
		i := findZone(doc.Zones, z.Name)
		doc.Zones = slices.Clone(doc.Zones)
		switch {
		case i >= 0 && c.Create:
			return nil, fmt.Errorf("control: zone %q: %w", z.Name, ErrConflict)
		case i >= 0:
			doc.Zones[i] = z
		default:
			doc.Zones = append(doc.Zones, z)
		}
	case OpDeleteZone:
		i := findZone(doc.Zones, c.ZoneName)
		if i < 0 {
			return nil, fmt.Errorf("control: zone %q: %w", c.ZoneName, ErrNotFound)
		}
		doc.Zones = slices.Delete(slices.Clone(doc.Zones), i, i+1)
	case OpPutRecordSet, OpDeleteRecordSet:
		zi := findZone(doc.Zones, c.ZoneName)
		if zi < 0 {
			return nil, fmt.Errorf("control: zone %q: %w", c.ZoneName, ErrNotFound)
		}
		doc.Zones = slices.Clone(doc.Zones)
		z := doc.Zones[zi]
		z.RecordSets = slices.Clone(z.RecordSets)
		if c.Op == OpPutRecordSet {
			if c.RecordSet == nil {
				return nil, errors.New("control: put_record_set needs a record set")
			}
			i := findRecordSet(z, c.RecordSet.Name, c.RecordSet.Type)
			switch {
			case i >= 0 && c.Create:
				return nil, fmt.Errorf("control: record set %s %s: %w", c.RecordSet.Name, c.RecordSet.Type, ErrConflict)
			case i >= 0:
				z.RecordSets[i] = *c.RecordSet
			default:
				z.RecordSets = append(z.RecordSets, *c.RecordSet)
			}
		} else {
			i := findRecordSet(z, c.Name, c.Type)
			if i < 0 {
				return nil, fmt.Errorf("control: record set %s %s in zone %q: %w", c.Name, c.Type, c.ZoneName, ErrNotFound)
			}
			z.RecordSets = slices.Delete(z.RecordSets, i, i+1)
		}
		z.SOA.Serial = serial
		doc.Zones[zi] = z
	case OpApplyDocument:
		if c.Document == nil {
			return nil, errors.New("control: apply_document needs a document")
		}
		d := *c.Document
		d.Zones = slices.Clone(d.Zones)
		for i := range d.Zones {
			d.Zones[i].SOA.Serial = zoneSerial(s.Document.Zones, d.Zones[i], serial)
		}
		next.Document = d
	default:
		return nil, fmt.Errorf("control: unknown command %q", c.Op)
	}
	if err := next.Document.Validate(); err != nil {
		var es config.Errors
		if errors.As(err, &es) {
			return nil, &ValidationError{Errors: es}
		}
		return nil, &ValidationError{Errors: config.Errors{{Message: err.Error()}}}
	}
	return next, nil
}

// zoneSerial keeps a zone's serial when a whole-document apply leaves it as it was, and
// gives it the new index when it changed.
func zoneSerial(old []config.Zone, z config.Zone, serial uint32) uint32 {
	i := findZone(old, z.Name)
	if i < 0 {
		return serial
	}
	prev := old[i]
	z.SOA.Serial = prev.SOA.Serial
	if reflect.DeepEqual(prev, z) {
		return prev.SOA.Serial
	}
	return serial
}
