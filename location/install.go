package location

import "github.com/prometheus/client_golang/prometheus"

// PatchZones installs snap, a patch of the snapshot in use (Snapshot.Patch) in which the
// zones named in changed (apexes) differ: the zones' metrics and withheld counts are updated
// for those zones only, so that a change costs what it changed, not every zone. Every query
// that starts after it returns reads the new zones.
func (s *Server) PatchZones(snap *Snapshot, changed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.xfr.adopt(snap)
	defer s.xfr.poke()
	old := s.snap.Swap(snap)
	s.cache.invalidate()
	s.noteFailures(old, snap)
	v := s.verdicts.Load()
	for _, name := range changed {
		name = canonical(name)
		before, after := old.zones[name], snap.zones[name]
		if before != nil {
			kept := map[SetName]bool{}
			if after != nil {
				for _, rs := range after.healthSets {
					kept[rs.setName()] = true
				}
			}
			for _, rs := range before.healthSets {
				if !kept[rs.setName()] {
					s.metrics.lastResorts.DeleteLabelValues(rs.label())
				}
				delete(s.withheld, rs)
			}
		}
		if after == nil {
			if before != nil {
				s.metrics.queries.DeletePartialMatch(prometheus.Labels{"zone": name})
				s.metrics.withheld.DeleteLabelValues(name)
				delete(s.zoneWithheld, name)
			}
			continue
		}
		total := 0
		for _, rs := range after.healthSets {
			n := withheldIn(rs, v)
			s.setWithheld(rs, n)
			total += n
		}
		s.zoneWithheld[name] = total
		s.metrics.withheld.WithLabelValues(name).Set(float64(total))
	}
	s.log.Debug("location: zones patched", "zones", len(changed))
}
