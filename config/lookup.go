package config

// Lookups over a document. They read the document as it is, and they expect it normalised (as
// Decode, Parse and Load return it); none of them caches anything.

// CheckByID returns the check named id.
func (d *Document) CheckByID(id string) (*Check, bool) {
	for i := range d.Checks {
		if d.Checks[i].ID == id {
			return &d.Checks[i], true
		}
	}
	return nil, false
}

// CheckIndex maps every check id to its position in d.Checks. Build it once when looking up
// many checks; it is the caller's own copy.
func (d *Document) CheckIndex() map[string]int {
	m := make(map[string]int, len(d.Checks))
	for i, c := range d.Checks {
		if _, dup := m[c.ID]; !dup {
			m[c.ID] = i
		}
	}
	return m
}

// ZoneByName returns the zone whose apex is name, written in any case, with or without the
// final dot.
func (d *Document) ZoneByName(name string) (*Zone, bool) {
	name = absName(name)
	for i := range d.Zones {
		if d.Zones[i].Name == name {
			return &d.Zones[i], true
		}
	}
	return nil, false
}

// ZoneFor returns the zone that holds the name qname: the zone with the longest apex at or
// above it. ok is false when no zone of d holds qname (a DNS location answers REFUSED).
func (d *Document) ZoneFor(qname string) (*Zone, bool) {
	qname = absName(qname)
	var best *Zone
	for i := range d.Zones {
		z := &d.Zones[i]
		if z.Name != "" && inZone(qname, z.Name) && (best == nil || len(z.Name) > len(best.Name)) {
			best = z
		}
	}
	return best, best != nil
}

// RecordSet returns the zone's record set of the absolute name and type t; name may be
// written in any case, with or without the final dot.
func (z *Zone) RecordSet(name string, t RecordType) (*RecordSet, bool) {
	name = absName(name)
	for i := range z.RecordSets {
		if rs := &z.RecordSets[i]; rs.Name == name && rs.Type == t {
			return rs, true
		}
	}
	return nil, false
}

// NameExists reports whether the absolute name owns any record set in the zone, or has a
// descendant that does (an empty non-terminal), or is the apex. It tells NODATA (true) from
// NXDOMAIN (false) when RecordSet finds no set of the type asked.
func (z *Zone) NameExists(name string) bool {
	name = absName(name)
	if name == z.Name {
		return true
	}
	for _, rs := range z.RecordSets {
		if inZone(rs.Name, name) {
			return true
		}
	}
	return false
}

// Probed reports whether the check probes a target (http, https, tcp), rather than being
// calculated from other checks.
func (c *Check) Probed() bool {
	return c.Protocol == ProtocolHTTP || c.Protocol == ProtocolHTTPS || c.Protocol == ProtocolTCP
}

// EvalOrder returns the ids of d's checks in an order where every calculated check comes
// after all of its children, so verdicts can be computed in one pass. It expects a valid
// document (no cycles); a check caught in a cycle is left out.
func (d *Document) EvalOrder() []string {
	index := d.CheckIndex()
	state := make([]uint8, len(d.Checks)) // 0 unseen, 1 on the path, 2 placed, 3 in a cycle
	order := make([]string, 0, len(d.Checks))
	var place func(i int) bool
	place = func(i int) bool {
		switch state[i] {
		case 1, 3:
			return false
		case 2:
			return true
		}
		state[i] = 1
		ok := true
		for _, child := range d.Checks[i].Children {
			if j, found := index[child]; found && !place(j) {
				ok = false
			}
		}
		if !ok {
			state[i] = 3
			return false
		}
		state[i] = 2
		order = append(order, d.Checks[i].ID)
		return true
	}
	for i, c := range d.Checks {
		if index[c.ID] == i {
			place(i)
		}
	}
	return order
}
