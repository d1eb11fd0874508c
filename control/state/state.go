package state

import (
	"errors"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/internal/ptree"
)

// State is everything the control plane stores, as of one raft index. A State is never
// changed after it is published: a command produces a new one, which shares with it every
// item the command did not touch (see package ptree), so one write costs what it changes, not the
// size of the configuration. Its items must not be changed by callers.
type State struct {
	// Index is the raft index of the last command that changed the state; 0 for an empty
	// store that has never been written.
	Index uint64
	// Voters maps the raft ID of each voter to the base URL of its HTTP API, so that any
	// voter can forward a write to the leader and a Watcher can find every voter.
	Voters map[string]string

	settings config.Document              // regions, quorum, name servers; no checks or zones
	checks   ptree.Map[storedCheck]       // by id
	shapes   ptree.Map[shapeRef]          // the checks' shapes, by shapeKey (statecheck.go)
	zones    ptree.Map[*config.Zone]      // by apex (CanonicalZone); RecordSets nil: see sets
	sets     ptree.Map[*config.RecordSet] // by setKey
	refs     ptree.Map[int]               // check id → records and calculated checks naming it
	served   ptree.Map[int]               // names the served rules follow, counted (served.go)
	shards   ptree.Map[[]int]             // by apex: name-server numbers from the stateful allocator
	ops      *opsState                    // alerts, overrides, audit log (ops.go); nil: none
	keys     ptree.Map[*dnssec.ZoneKeys]  // by apex: DNSSEC keys, sealed (dnssec.go)
	tsig     map[string]*StoredTSIGKey    // by name: TSIG keys of transfers, sealed (tsig.go); never changed once published
	// hideSealed writes the zones' keys without their sealed private halves (withoutSealed).
	hideSealed bool
}

// Sentinel errors that the API maps to status codes.
var (
	// ErrNotFound: the check, zone, record set or voter named does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a create named something that already exists.
	ErrConflict = errors.New("already exists")
)

// Empty is the state of a store that has never been written.
func Empty() *State {
	d := config.DefaultDocument()
	return &State{settings: d}
}

// NewState returns a state holding doc (as a data-plane node given a static configuration
// runs from), at index 0. doc is copied.
func NewState(doc *config.Document) *State {
	s := Empty()
	e := s.Edit(0)
	e.SetSettings(doc)
	for i := range doc.Checks {
		c := doc.Checks[i]
		e.PutCheck(&c)
	}
	for i := range doc.Zones {
		z := doc.Zones[i]
		e.putZone(&z)
	}
	return e.Next
}

// setKey is the key of a record set: its zone's apex, its owner name and its type.
func setKey(apex, owner string, typ config.RecordType) string {
	return apex + "\x00" + owner + "\x00" + string(typ)
}

// zonePrefix is the common start of the keys of a zone's record sets.
func zonePrefix(apex string) string { return apex + "\x00" }

// ownerPrefix is the common start of the keys of the record sets at one owner name.
func ownerPrefix(apex, owner string) string { return apex + "\x00" + owner + "\x00" }

// splitSetKey returns the apex, owner and type of a record set's key.
func splitSetKey(k string) (apex, owner string, typ config.RecordType) {
	apex, rest, _ := strings.Cut(k, "\x00")
	owner, t, _ := strings.Cut(rest, "\x00")
	return apex, owner, config.RecordType(t)
}

// Settings returns the document's regions, quorum and name-server settings, without checks
// or zones.
func (s *State) Settings() config.Document {
	d := s.settings
	d.Regions = slices.Clone(d.Regions)
	return d
}

// Regions returns the document's regions. The caller must not change the slice.
func (s *State) Regions() []string { return s.settings.Regions }

// NumChecks returns the number of checks.
func (s *State) NumChecks() int { return s.checks.Len() }

// NumZones returns the number of zones.
func (s *State) NumZones() int { return s.zones.Len() }

// NumRecordSets returns the number of record sets of all zones.
func (s *State) NumRecordSets() int { return s.sets.Len() }

// Check returns the check with id.
func (s *State) Check(id string) (config.Check, bool) {
	if c, ok := s.checks.Get(id); ok {
		return *c.check(), true
	}
	return config.Check{}, false
}

// CheckRef returns the check with id; the caller must not change it (its slices and maps
// are the state's). The state holds checks compactly (statecheck.go): each call returns a
// new copy.
func (s *State) CheckRef(id string) (*config.Check, bool) {
	if c, ok := s.checks.Get(id); ok {
		return c.check(), true
	}
	return nil, false
}

// Checks returns every check in order of id. A check yielded is valid until the next one
// is: the state holds checks compactly (statecheck.go) and makes each in one scratch, so
// that reading a million leaves no garbage; a caller that keeps a check copies it (*c), and
// must not change its slices and maps (the state's).
func (s *State) Checks() iter.Seq[*config.Check] {
	return func(yield func(*config.Check) bool) {
		var scratch config.Check
		for _, c := range s.checks.All("") {
			c.into(&scratch)
			if !yield(&scratch) {
				return
			}
		}
	}
}

// ZoneHeads returns every zone without its record sets, in order of apex; the caller must
// not change them.
func (s *State) ZoneHeads() iter.Seq[*config.Zone] {
	return func(yield func(*config.Zone) bool) {
		for _, z := range s.zones.All("") {
			if !yield(z) {
				return
			}
		}
	}
}

// ZoneHead returns the zone with the given name, in any case and with or without the final
// dot, without its record sets; the caller must not change it.
func (s *State) ZoneHead(name string) (*config.Zone, bool) {
	return s.zones.Get(CanonicalZone(name))
}

// RecordSets returns the record sets of a zone (named as in ZoneHead) in order of owner
// name and type; the caller must not change them.
func (s *State) RecordSets(zone string) iter.Seq[*config.RecordSet] {
	p := zonePrefix(CanonicalZone(zone))
	return func(yield func(*config.RecordSet) bool) {
		for _, rs := range s.sets.Prefix(p) {
			if !yield(rs) {
				return
			}
		}
	}
}

// Zone returns the zone with the given name, in any case and with or without the final
// dot, with its record sets.
func (s *State) Zone(name string) (config.Zone, bool) {
	h, ok := s.ZoneHead(name)
	if !ok {
		return config.Zone{}, false
	}
	z := *h
	z.RecordSets = nil
	for rs := range s.RecordSets(h.Name) {
		z.RecordSets = append(z.RecordSets, *rs)
	}
	return z, true
}

// RecordSet returns the record set of the zone with the given owner name and type.
func (s *State) RecordSet(zone, name string, typ config.RecordType) (config.RecordSet, bool) {
	apex := CanonicalZone(zone)
	if rs, ok := s.sets.Get(setKey(apex, CanonicalOwner(apex, name), config.RecordType(strings.ToUpper(string(typ))))); ok {
		return *rs, true
	}
	return config.RecordSet{}, false
}

// Shard returns the name-server numbers the stateful allocator gave a zone; nil when it has
// none (stateless mode, or a zone that lists its own name servers).
func (s *State) Shard(zone string) []int {
	v, _ := s.shards.Get(CanonicalZone(zone))
	return v
}

// Shards returns every zone's stored name-server shard, by apex.
func (s *State) Shards() map[string][]int {
	out := make(map[string][]int, s.shards.Len())
	for k, v := range s.shards.All("") {
		out[k] = v
	}
	return out
}

// Document returns the whole configuration as one document: checks in order of id, zones in
// order of apex with their record sets in order of owner and type. It copies every item: a
// read of everything, not for a path that must cost what changed.
func (s *State) Document() *config.Document {
	d := s.Settings()
	d.Checks = make([]config.Check, 0, s.checks.Len())
	for c := range s.Checks() {
		d.Checks = append(d.Checks, *c)
	}
	d.Zones = make([]config.Zone, 0, s.zones.Len())
	for z := range s.ZoneHeads() {
		zz, _ := s.Zone(z.Name)
		d.Zones = append(d.Zones, zz)
	}
	return &d
}

// VoterURLs returns the API URLs of the voters, sorted.
func (s *State) VoterURLs() []string {
	out := slices.Collect(maps.Values(s.Voters))
	slices.Sort(out)
	return slices.Compact(out)
}

// WithShards returns a copy of s that stores these name-server shards, by zone, in place of
// its own: for a state made outside the control plane (a tool, a test) in stateful mode.
func (s *State) WithShards(shards map[string][]int) *State {
	e := s.Edit(s.Index)
	for apex := range s.shards.All("") {
		e.setShard(apex, nil)
	}
	for zone, servers := range shards {
		e.setShard(CanonicalZone(zone), servers)
	}
	return e.Next
}
