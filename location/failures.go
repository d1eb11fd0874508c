package location

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/ptree"
)

// ZoneState is one zone of the configuration as this location serves it: the version it
// answers from, and, when the zone's configured version did not compile, why.
type ZoneState struct {
	// Zone is the apex.
	Zone string `json:"zone"`
	// Served says the location answers for the zone; Serial is the SOA serial of the version
	// it answers from.
	Served bool   `json:"served"`
	Serial uint32 `json:"serial,omitempty"`
	// Error, when not empty, says why the configured version of the zone is not installed:
	// the location answers from its previous version (Served) or not at all, until a version
	// that compiles arrives. The other zones are not held back.
	Error string `json:"error,omitempty"`
	// Unsigned, when not empty, says why the location answers the zone unsigned although
	// the control plane signs it (Server.ZoneStates): validating resolvers that trust the
	// zone's DS get SERVFAIL from this location until it can sign.
	Unsigned string `json:"unsigned,omitempty"`
}

// Rebuild compiles zones as NewSnapshot does, with shards as there, except that a zone that
// does not compile does not fail the others: it keeps its version in s, when s has one, and
// is listed in ZoneStates with its error.
func (s *Snapshot) Rebuild(zones []config.Zone, shards map[string][]NameServer) *Snapshot {
	byApex := make(map[string][]NameServer, len(shards))
	for apex, nss := range shards {
		byApex[canonical(apex)] = nss
	}
	patches := make([]ZonePatch, len(zones))
	for i := range zones {
		patches[i] = ZonePatch{Apex: zones[i].Name, Zone: &zones[i], Shard: byApex[canonical(zones[i].Name)]}
	}
	return s.RebuildZones(patches)
}

// RebuildZones is Rebuild of the zones of patches, each with its shard (and its record sets
// in Sets, when set, shared as Patch shares them); a patch without a Zone is ignored.
func (s *Snapshot) RebuildZones(zones []ZonePatch) *Snapshot {
	n := &Snapshot{zones: make(map[string]*zone, len(zones))}
	tok := new(ptree.Token)
	for _, p := range zones {
		if p.Zone == nil {
			continue
		}
		apex := canonical(p.Zone.Name)
		z, err := compileZone(p.Zone, p.Sets, p.Shard)
		if err == nil && n.zones[z.name] != nil {
			continue // hosted twice: the first stays (the configuration has one zone per apex)
		}
		if err != nil {
			n.fail(apex, err)
			continue
		}
		n.add(tok, z)
	}
	for apex := range n.failed {
		if prev := s.zones[apex]; prev != nil && n.zones[apex] == nil {
			n.add(tok, prev)
		}
	}
	return n
}

// fail records that the configured version of zone apex did not compile.
func (s *Snapshot) fail(apex string, err error) {
	if s.failed == nil {
		s.failed = map[string]string{}
	}
	s.failed[apex] = err.Error()
}

// ZoneStates returns every zone of the configuration as this snapshot serves it, sorted by
// apex: the zones it hosts, and those that did not compile.
func (s *Snapshot) ZoneStates() []ZoneState {
	out := make([]ZoneState, 0, len(s.zones)+len(s.failed))
	for name, z := range s.zones {
		out = append(out, ZoneState{Zone: name, Served: true, Serial: z.servedSOA().Serial, Error: s.failed[name]})
	}
	for name, err := range s.failed {
		if s.zones[name] == nil {
			out = append(out, ZoneState{Zone: name, Error: err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Zone < out[j].Zone })
	return out
}

// Failures returns the zones of ZoneStates whose configured version is not installed.
func (s *Snapshot) Failures() []ZoneState {
	out := make([]ZoneState, 0, len(s.failed))
	for _, z := range s.ZoneStates() {
		if z.Error != "" {
			out = append(out, z)
		}
	}
	return out
}

// servedLabel is the value of the "served" label of the failed-zone gauge.
func servedLabel(served bool) string {
	if served {
		return "previous"
	}
	return "none"
}

// noteFailures brings the failed-zone gauge and the log to snap, installed in place of old.
// The caller holds s.mu.
func (s *Server) noteFailures(old, snap *Snapshot) {
	for apex := range old.failed {
		if _, still := snap.failed[apex]; !still {
			s.metrics.zoneFailed.DeletePartialMatch(prometheus.Labels{"zone": apex})
			s.log.Info("location: zone installed again", "zone", apex)
		}
	}
	for apex, err := range snap.failed {
		served := snap.zones[apex] != nil
		s.metrics.zoneFailed.DeleteLabelValues(apex, servedLabel(!served))
		s.metrics.zoneFailed.WithLabelValues(apex, servedLabel(served)).Set(1)
		if old.failed[apex] != err {
			s.log.Warn("location: zone not installed; the other zones are", "zone", apex, "serving", servedLabel(served), "err", err)
		}
	}
}
