package location

import (
	"cmp"

	"github.com/miekg/dns"
)

// SetName names a record set: its absolute owner name (lower case, with the final dot) and
// its type ("A", "AAAA", ...).
type SetName struct {
	Name, Type string
}

func (rs *rrset) setName() SetName {
	return SetName{Name: rs.cfg.Name, Type: dns.TypeToString[rs.rtype]}
}

// HealthSetsOf returns the record sets whose answers check id can change (those whose
// policy consults health and that have a record decided by it).
func (s *Snapshot) HealthSetsOf(id string) []SetName {
	sets := s.setsFor(id)
	if len(sets) == 0 {
		return nil
	}
	out := make([]SetName, len(sets))
	for i, rs := range sets {
		out[i] = rs.setName()
	}
	return out
}

// GoneHealthSets returns the record sets that consult health checks in old and not in now,
// looking only at the zones named (apexes; nil: every zone of old). It costs those zones'
// record sets that consult health checks.
func GoneHealthSets(old, now *Snapshot, zones []string) []SetName {
	if old == nil {
		return nil
	}
	var out []SetName
	gone := func(apex string) {
		before := old.zones[apex]
		if before == nil {
			return
		}
		after := now.zones[apex]
		kept := map[SetName]bool{}
		if after != nil {
			for _, rs := range after.healthSets {
				kept[rs.setName()] = true
			}
		}
		for _, rs := range before.healthSets {
			if n := rs.setName(); !kept[n] {
				out = append(out, n)
			}
		}
	}
	if zones == nil {
		for apex := range old.zones {
			gone(apex)
		}
		return out
	}
	for _, apex := range zones {
		gone(canonical(apex))
	}
	return out
}

// compareLabels orders record sets as their labels sort, without making the labels.
func compareLabels(a, b *rrset) int {
	at, bt := dns.TypeToString[a.rtype], dns.TypeToString[b.rtype]
	la, lb := len(a.cfg.Name)+1+len(at), len(b.cfg.Name)+1+len(bt)
	for i := range min(la, lb) {
		if ca, cb := labelByte(a.cfg.Name, at, i), labelByte(b.cfg.Name, bt, i); ca != cb {
			return cmp.Compare(ca, cb)
		}
	}
	return cmp.Compare(la, lb)
}

// labelByte returns byte i of the label name + "/" + typ.
func labelByte(name, typ string, i int) byte {
	switch {
	case i < len(name):
		return name[i]
	case i == len(name):
		return '/'
	default:
		return typ[i-len(name)-1]
	}
}
