package state

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/ptree"
)

// Edit makes the next State from a published one: its writes copy only the paths they
// change (under one edit token), it records which items changed, and validate checks just
// those items against the rest. Nothing of the base State changes.
type Edit struct {
	// Next is the state being made, published once the edit is done; base the one it follows.
	Next *State
	base *State
	tok  *ptree.Token

	// prefixed makes validation errors name the item they are in (checks["web-1"].interval):
	// an edit of many items; an edit of one has paths relative to it.
	prefixed bool

	settings bool
	voters   bool
	checks   map[string]bool // ids put or deleted
	zones    map[string]bool // apexes whose head was put or deleted
	sets     map[string]bool // record-set keys put or deleted
	shards   map[string]bool // apexes whose shard changed

	// lastShape is the shape of the check the edit stored last, and its key (statecheck.go):
	// the checks of a batch often share one.
	lastShape *config.Check
	lastKey   string

	// overrides: the maintenance overrides changed (ops_override.go).
	overrides bool
	// tsig: the TSIG keys changed (tsig.go).
	tsig bool
}

// Edit starts the state that follows s at index.
func (s *State) Edit(index uint64) *Edit {
	next := *s
	next.Index = index
	return &Edit{Next: &next, base: s, tok: new(ptree.Token),
		checks: map[string]bool{}, zones: map[string]bool{}, sets: map[string]bool{}, shards: map[string]bool{}}
}

// size is how many items the edit changed.
func (e *Edit) size() int {
	n := len(e.checks) + len(e.zones) + len(e.sets) + len(e.shards)
	if e.settings {
		n++
	}
	if e.voters {
		n++
	}
	if e.overrides {
		n++
	}
	if e.tsig {
		n++
	}
	return n
}

// SetSettings puts d's regions, quorum and name-server settings in place.
func (e *Edit) SetSettings(d *config.Document) {
	next := config.Document{Regions: slices.Clip(slices.Clone(d.Regions)), Quorum: d.Quorum, NameServers: d.NameServers, Notifications: d.Notifications}
	if reflect.DeepEqual(next, e.Next.settings) {
		return
	}
	e.Next.settings = next
	e.settings = true
}

// setVoter records (api != "") or forgets a voter's API URL.
func (e *Edit) setVoter(id, api string, forget bool) {
	v := maps.Clone(e.Next.Voters)
	if v == nil {
		v = map[string]string{}
	}
	if forget {
		delete(v, id)
	} else {
		v[id] = api
	}
	e.Next.Voters = v
	e.voters = true
}

// addRefs counts (delta 1) or uncounts (delta -1) the checks that c names: its children.
func (e *Edit) addRefs(ids []string, delta int) {
	for _, id := range ids {
		n, _ := e.Next.refs.Get(id)
		if n += delta; n <= 0 {
			e.Next.refs, _ = e.Next.refs.Delete(e.tok, id)
		} else {
			e.Next.refs = e.Next.refs.Set(e.tok, id, n)
		}
	}
}

// healthChecks returns the checks a record set's records name.
func healthChecks(rs *config.RecordSet) []string {
	var out []string
	for _, r := range rs.Records {
		if r.HealthCheck != "" {
			out = append(out, r.HealthCheck)
		}
	}
	return out
}

// PutCheck stores c (the edit keeps the pointer). A check whose regions are the document's
// shares the settings' list: items are never changed once stored, and a million checks
// then hold one list, not a million.
func (e *Edit) PutCheck(c *config.Check) {
	if len(c.Regions) > 0 && slices.Equal(c.Regions, e.Next.settings.Regions) {
		c.Regions = e.Next.settings.Regions
	}
	if old, ok := e.Next.checks.Get(c.ID); ok {
		e.addRefs(old.shape.Children, -1)
		e.release(old)
	}
	e.addRefs(c.Children, 1)
	e.Next.checks = e.Next.checks.Set(e.tok, c.ID, e.store(c))
	e.checks[c.ID] = true
}

// deleteCheck removes the check id and reports whether it existed.
func (e *Edit) deleteCheck(id string) bool {
	old, ok := e.Next.checks.Get(id)
	if !ok {
		return false
	}
	e.addRefs(old.shape.Children, -1)
	e.release(old)
	e.Next.checks, _ = e.Next.checks.Delete(e.tok, id)
	e.checks[id] = true
	return true
}

// putZoneHead stores a zone's head (its record sets are ignored) under its canonical apex.
func (e *Edit) putZoneHead(z *config.Zone) {
	h := *z
	h.RecordSets = nil
	apex := CanonicalZone(h.Name)
	e.Next.zones = e.Next.zones.Set(e.tok, apex, &h)
	e.zones[apex] = true
}

// putZone replaces a zone, its record sets included.
func (e *Edit) putZone(z *config.Zone) {
	apex := CanonicalZone(z.Name)
	e.deleteSets(apex)
	e.putZoneHead(z)
	for i := range z.RecordSets {
		rs := z.RecordSets[i]
		e.putSet(apex, &rs)
	}
}

// deleteZone removes a zone and its record sets and reports whether it existed.
func (e *Edit) deleteZone(apex string) bool {
	if _, ok := e.Next.zones.Get(apex); !ok {
		return false
	}
	e.deleteSets(apex)
	e.Next.zones, _ = e.Next.zones.Delete(e.tok, apex)
	e.SetZoneKeys(apex, nil)
	e.zones[apex] = true
	return true
}

// deleteSets removes every record set of a zone.
func (e *Edit) deleteSets(apex string) {
	var keys []string
	for k := range e.Next.sets.Prefix(zonePrefix(apex)) {
		keys = append(keys, k)
	}
	for _, k := range keys {
		e.deleteSet(k)
	}
}

// putSet stores a record set of the zone apex (the name must be normalised: absolute).
func (e *Edit) putSet(apex string, rs *config.RecordSet) {
	owner := CanonicalOwner(apex, rs.Name)
	k := setKey(apex, owner, rs.Type)
	if rs.Name == owner {
		// The set's name is the middle of its key: one string held, not two.
		rs.Name = k[len(apex)+1 : len(apex)+1+len(owner)]
	}
	if old, ok := e.Next.sets.Get(k); ok {
		e.addRefs(healthChecks(old), -1)
		e.indexServed(apex, owner, old, -1)
	}
	e.addRefs(healthChecks(rs), 1)
	e.indexServed(apex, owner, rs, 1)
	e.Next.sets = e.Next.sets.Set(e.tok, k, rs)
	e.sets[k] = true
}

// deleteSet removes the record set with key k and reports whether it existed.
func (e *Edit) deleteSet(k string) bool {
	old, ok := e.Next.sets.Get(k)
	if !ok {
		return false
	}
	e.addRefs(healthChecks(old), -1)
	apex, owner, _ := splitSetKey(k)
	e.indexServed(apex, owner, old, -1)
	e.Next.sets, _ = e.Next.sets.Delete(e.tok, k)
	e.sets[k] = true
	return true
}

// setShard stores (servers != nil) or removes a zone's name-server shard.
func (e *Edit) setShard(apex string, servers []int) {
	if servers == nil {
		e.Next.shards, _ = e.Next.shards.Delete(e.tok, apex)
	} else {
		e.Next.shards = e.Next.shards.Set(e.tok, apex, servers)
	}
	e.shards[apex] = true
}

// touchedZones returns the apexes of the zones whose head or record sets changed and that
// still exist, sorted.
func (e *Edit) touchedZones() []string {
	seen := map[string]bool{}
	for apex := range e.zones {
		seen[apex] = true
	}
	for k := range e.sets {
		apex, _, _ := splitSetKey(k)
		seen[apex] = true
	}
	var out []string
	for apex := range seen {
		if _, ok := e.Next.zones.Get(apex); ok {
			out = append(out, apex)
		}
	}
	slices.Sort(out)
	return out
}

// stampSerials gives every zone the edit changed the serial serial.
func (e *Edit) stampSerials(serial uint32) {
	for _, apex := range e.touchedZones() {
		h, _ := e.Next.zones.Get(apex)
		if h.SOA.Serial == serial {
			continue
		}
		c := *h
		c.SOA.Serial = serial
		e.Next.zones = e.Next.zones.Set(e.tok, apex, &c)
		e.zones[apex] = true
	}
}

// hasCheck says whether the edited state holds the check id.
func (e *Edit) hasCheck(id string) bool {
	_, ok := e.Next.checks.Get(id)
	return ok
}

// validate checks what the edit changed against the rest of the state: every check and
// zone put, every record set put, and that nothing still names a check that was deleted.
// A change of settings (regions, name servers) validates the whole document. It returns a
// *ValidationError, or a not-found error for a record set whose zone does not exist.
func (e *Edit) validate() error {
	if e.settings {
		return validationError(e.Next.Document().Validate())
	}
	es := e.validateChecks(nil)
	es, whole := e.validateZones(es)
	es, err := e.validateSets(es, whole)
	if err != nil {
		return err
	}
	es = e.validateServed(es, whole)
	if len(es) > 0 {
		return &ValidationError{Errors: es}
	}
	return nil
}

// validateChecks appends to es the problems of the checks the edit put, and of those it
// deleted that something still names.
func (e *Edit) validateChecks(es config.Errors) config.Errors {
	for _, id := range slices.Sorted(maps.Keys(e.checks)) {
		c, ok := e.Next.CheckRef(id)
		if !ok {
			if n, _ := e.Next.refs.Get(id); n > 0 {
				es = appendAt(es, e.prefix("checks", id), fmt.Errorf("check %q is still named by %d record(s) or calculated check(s): change those first", id, n))
			}
			continue
		}
		if err := e.Next.settings.ValidateCheck(c, e.hasCheck); err != nil {
			es = appendAt(es, e.prefix("checks", id), err)
			continue
		}
		if c.Protocol == config.ProtocolCalculated {
			if cycle := config.CalculatedCycle(id, e.children); cycle != nil {
				es = appendAt(es, e.prefix("checks", id), config.Errors{config.CycleError(cycle)})
			}
		}
	}
	return es
}

// validateZones appends to es the problems of the zones the edit put, and returns the set of
// their apexes: their record sets were validated with them.
func (e *Edit) validateZones(es config.Errors) (config.Errors, map[string]bool) {
	whole := map[string]bool{}
	for _, apex := range slices.Sorted(maps.Keys(e.zones)) {
		if _, ok := e.Next.zones.Get(apex); !ok {
			continue
		}
		whole[apex] = true
		z, _ := e.Next.Zone(apex)
		if err := e.Next.settings.ValidateZone(&z, e.hasCheck); err != nil {
			es = appendAt(es, e.prefix("zones", apex), err)
		}
	}
	return es, whole
}

// validateSets appends to es the problems of the record sets the edit put, and of the sets
// left beside each set deleted (a DS needs its NS), outside the zones whole. It fails with a
// not-found error for a set whose zone does not exist.
func (e *Edit) validateSets(es config.Errors, whole map[string]bool) (config.Errors, error) {
	check := map[string]bool{}
	for k := range e.sets {
		if _, ok := e.Next.sets.Get(k); ok {
			check[k] = true
			continue
		}
		apex, owner, _ := splitSetKey(k)
		for left := range e.Next.sets.Prefix(ownerPrefix(apex, owner)) {
			check[left] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(check)) {
		apex, owner, _ := splitSetKey(k)
		rs, ok := e.Next.sets.Get(k)
		if !ok || whole[apex] {
			continue
		}
		z, ok := e.Next.zones.Get(apex)
		if !ok {
			return es, fmt.Errorf("control: zone %q: %w", apex, ErrNotFound)
		}
		var others []config.RecordSet
		for ok2, o := range e.Next.sets.Prefix(ownerPrefix(apex, owner)) {
			if ok2 != k {
				others = append(others, *o)
			}
		}
		if err := e.Next.settings.ValidateRecordSet(z, rs, others, e.hasCheck); err != nil {
			es = appendAt(es, e.prefix("record_sets", rs.Name+" "+string(rs.Type)), err)
		}
	}
	return es, nil
}

// prefix returns the path of an error of the named kind's item in a prefixed edit: "" when
// the edit is not prefixed.
func (e *Edit) prefix(kind, name string) string {
	if !e.prefixed {
		return ""
	}
	return fmt.Sprintf("%s[%q]", kind, name)
}

// appendAt appends err to es with prefix before each of its paths: each field error of a
// config.Errors, or err as one error at prefix.
func appendAt(es config.Errors, prefix string, err error) config.Errors {
	var fes config.Errors
	if !errors.As(err, &fes) {
		return append(es, config.FieldError{Path: prefix, Message: err.Error()})
	}
	for _, fe := range fes {
		if fe.Path == "" {
			fe.Path = prefix
		} else if prefix != "" {
			fe.Path = prefix + "." + fe.Path
		}
		es = append(es, fe)
	}
	return es
}

// children returns a check's children and whether it is calculated, for cycle detection.
func (e *Edit) children(id string) ([]string, bool) {
	c, ok := e.Next.checks.Get(id)
	if !ok || c.shape.Protocol != config.ProtocolCalculated {
		return nil, false
	}
	return c.shape.Children, true
}

// validationError wraps the errors of Validate in a *ValidationError.
func validationError(err error) error {
	if err == nil {
		return nil
	}
	var es config.Errors
	if errors.As(err, &es) {
		return &ValidationError{Errors: es}
	}
	return &ValidationError{Errors: config.Errors{{Message: err.Error()}}}
}
