package state

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// Delta is what changed in the state after index From, as of index Index: every item that
// changed, as it is at Index, and the names of those removed. Applied to the state at From,
// it gives the state at Index. It is the answer of GET /v1/changes when the voter's change
// log reaches back to From.
type Delta struct {
	// From is the index the delta starts after; Index the index it brings the state to.
	From  uint64 `json:"from"`
	Index uint64 `json:"index"`
	// Settings holds the regions, quorum, name-server and notification settings at Index (no
	// checks or zones, the notifications' secrets redacted), always.
	Settings config.Document `json:"settings"`
	// Voters maps every voter's raft ID to its API URL at Index, always.
	Voters map[string]string `json:"voters"`
	// Checks are the checks put; DeletedChecks the ids of those removed.
	Checks        []*config.Check `json:"checks,omitempty"`
	DeletedChecks []string        `json:"deleted_checks,omitempty"`
	// Zones are the zones whose head was put, without their record sets; DeletedZones the
	// apexes of those removed (their record sets are listed as removed too).
	Zones        []*config.Zone `json:"zones,omitempty"`
	DeletedZones []string       `json:"deleted_zones,omitempty"`
	// RecordSets are the record sets put; DeletedRecordSets those removed.
	RecordSets        []ZoneRecordSet `json:"record_sets,omitempty"`
	DeletedRecordSets []RecordSetName `json:"deleted_record_sets,omitempty"`
	// Shards are the name-server shards that changed, by apex; an empty list: removed.
	Shards map[string][]int `json:"shards,omitempty"`
	// Overrides, when the maintenance overrides changed, are all of them.
	Overrides *OverrideList `json:"overrides,omitempty"`
	// ZoneKeys are the DNSSEC keys, private halves sealed, of the zones in Zones that have
	// keys; a zone of Zones absent here has none.
	ZoneKeys map[string]*dnssec.ZoneKeys `json:"zone_keys,omitempty"`
	// TSIGKeys, when the TSIG keys of transfers changed, are all of them, secrets sealed.
	TSIGKeys *TSIGKeyList `json:"tsig_keys,omitempty"`
}

// ZoneRecordSet is a record set with the apex of its zone.
type ZoneRecordSet struct {
	// Zone is the apex of the record set's zone.
	Zone string `json:"zone"`
	// RecordSet is the record set.
	RecordSet *config.RecordSet `json:"record_set"`
}

// RecordSetName names a record set: its zone's apex, its owner name and its type.
type RecordSetName struct {
	Zone string            `json:"zone"`
	Name string            `json:"name"`
	Type config.RecordType `json:"type"`
}

// Delta returns the items of s named by the change keys, as a Delta from from.
func (s *State) Delta(from uint64, keys map[string]bool) *Delta {
	d := &Delta{From: from, Index: s.Index, Settings: s.Settings(), Voters: s.Voters}
	d.Settings.Notifications = d.Settings.Notifications.Redacted() // secrets stay with the voters
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if k == keyOverride {
			d.Overrides = &OverrideList{Items: s.Overrides()}
		}
		if k == keyTSIG {
			d.TSIGKeys = &TSIGKeyList{Items: s.tsigList(false)}
		}
		if len(k) < 2 {
			continue // settings and voters are always sent
		}
		name := k[1:]
		switch k[0] {
		case kindCheck:
			if c, ok := s.CheckRef(name); ok {
				d.Checks = append(d.Checks, c)
			} else {
				d.DeletedChecks = append(d.DeletedChecks, name)
			}
		case kindZone:
			if z, ok := s.zones.Get(name); ok {
				d.Zones = append(d.Zones, z)
				s.deltaZoneKeys(d, name)
			} else {
				d.DeletedZones = append(d.DeletedZones, name)
			}
		case kindSet:
			apex, owner, typ := splitSetKey(name)
			if rs, ok := s.sets.Get(name); ok {
				d.RecordSets = append(d.RecordSets, ZoneRecordSet{Zone: apex, RecordSet: rs})
			} else {
				d.DeletedRecordSets = append(d.DeletedRecordSets, RecordSetName{Zone: apex, Name: owner, Type: typ})
			}
		case kindShard:
			if d.Shards == nil {
				d.Shards = map[string][]int{}
			}
			servers, _ := s.shards.Get(name)
			if servers == nil {
				servers = []int{} // a removed shard is [], not null
			}
			d.Shards[name] = servers
		}
	}
	return d
}

// ApplyDelta returns the edit that d makes of s: the state at d.Index and what changed. s
// must be at index d.From or later (a delta applied again is harmless: items are set, not
// merged). The voter validated every item; applyDelta checks only that the delta fits.
func (s *State) ApplyDelta(d *Delta) (*Edit, error) {
	if d.Index < s.Index {
		return nil, fmt.Errorf("control: delta to index %d is older than the state's %d", d.Index, s.Index)
	}
	if d.From > s.Index {
		return nil, fmt.Errorf("control: delta from index %d does not follow the state's %d", d.From, s.Index)
	}
	e := s.Edit(d.Index)
	e.SetSettings(&d.Settings)
	if !maps.Equal(s.Voters, d.Voters) {
		e.Next.Voters = d.Voters
		e.voters = true
	}
	for _, c := range d.Checks {
		if c == nil || c.ID == "" {
			return nil, errors.New("control: delta: a check without an id")
		}
		e.PutCheck(c)
	}
	for _, id := range d.DeletedChecks {
		e.deleteCheck(id)
		e.checks[id] = true
	}
	for _, apex := range d.DeletedZones {
		e.deleteZone(apex)
		e.zones[apex] = true
	}
	for _, z := range d.Zones {
		if z == nil {
			return nil, errors.New("control: delta: an empty zone")
		}
		e.putZoneHead(z)
		apex := CanonicalZone(z.Name)
		e.SetZoneKeys(apex, d.ZoneKeys[apex])
	}
	for _, n := range d.DeletedRecordSets {
		k := setKey(n.Zone, n.Name, n.Type)
		e.deleteSet(k)
		e.sets[k] = true
	}
	for _, zs := range d.RecordSets {
		if zs.RecordSet == nil {
			return nil, errors.New("control: delta: an empty record set")
		}
		if _, ok := e.Next.zones.Get(zs.Zone); !ok {
			return nil, fmt.Errorf("control: delta: a record set of zone %s, which the state lacks", zs.Zone)
		}
		e.putSet(zs.Zone, zs.RecordSet)
	}
	if d.Overrides != nil {
		e.setOverrides(d.Overrides)
	}
	if d.TSIGKeys != nil {
		e.setTSIG(tsigMap(d.TSIGKeys.Items))
	}
	for apex, servers := range d.Shards {
		if len(servers) == 0 {
			servers = nil
		}
		e.setShard(apex, servers)
	}
	return e, nil
}
