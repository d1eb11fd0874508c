package config

import (
	"fmt"
	"strings"
)

// recordTypes are the types a record set may have, in the order error messages list them.
func recordTypes() []RecordType {
	return []RecordType{TypeA, TypeAAAA, TypeCNAME, TypeTXT, TypeMX, TypeNS}
}

// validateZone checks zone i of the document: that its name is its own, then the zone.
func (v *validator) validateZone(i int) {
	z := &v.doc.Zones[i]
	p := fmt.Sprintf("zones[%d]", i)
	if apex := v.zoneItem(z, p); apex != "" {
		if j, dup := v.zones[apex]; dup {
			v.add(join(p, "name"), "duplicate zone %s (also zones[%d])", apex, j)
		} else {
			v.zones[apex] = i
		}
	}
}

// zoneItem checks one zone at path p: its name, TTL, SOA, name servers and record sets. It
// returns the zone's apex, or "" when its name is invalid.
func (v *validator) zoneItem(z *Zone, p string) string {
	apex := ""
	switch {
	case z.Name == "":
		v.add(join(p, "name"), "required: the zone's apex, e.g. example.com.")
	case absName(z.Name) == ".":
		v.add(join(p, "name"), "the root zone cannot be served")
	case nameProblem(absName(z.Name)) != "":
		v.add(join(p, "name"), "invalid zone name %q: %s", z.Name, nameProblem(absName(z.Name)))
	default:
		apex = absName(z.Name)
	}
	if z.TTL > maxTTL {
		v.add(join(p, "ttl"), "must be 0..%d, got %d", maxTTL, z.TTL)
	}
	v.validateSOA(z, p)
	seen := map[string]int{}
	for j, ns := range z.NameServers {
		np := join(p, fmt.Sprintf("name_servers[%d]", j))
		if prob := nameProblem(absName(ns)); prob != "" {
			v.add(np, "invalid name server %q: %s", ns, prob)
		} else if k, dup := seen[absName(ns)]; dup {
			v.add(np, "duplicate name server %q (also name_servers[%d])", ns, k)
		} else {
			seen[absName(ns)] = j
		}
	}
	v.validateRecordSets(z, p, apex)
	return apex
}

// validateSOA checks the SOA fields that the document may set.
func (v *validator) validateSOA(z *Zone, p string) {
	s := z.SOA
	p = join(p, "soa")
	if s.MName != "" {
		if prob := nameProblem(absName(s.MName)); prob != "" {
			v.add(join(p, "mname"), "invalid name server %q: %s", s.MName, prob)
		}
	}
	switch {
	case s.RName == "":
	case strings.Contains(s.RName, "@"):
		v.add(join(p, "rname"), "write the mailbox as a domain name, e.g. hostmaster.example.com. for hostmaster@example.com, got %q", s.RName)
	case nameProblem(absName(s.RName)) != "":
		v.add(join(p, "rname"), "invalid mailbox %q: %s", s.RName, nameProblem(absName(s.RName)))
	}
	for _, f := range []struct {
		name string
		val  uint32
	}{{"refresh", s.Refresh}, {"retry", s.Retry}, {"expire", s.Expire}} {
		if f.val < 1 || f.val > maxTTL {
			v.add(join(p, f.name), "must be 1..%d, got %d", maxTTL, f.val)
		}
	}
	if s.Minimum > maxNegativeTTL {
		v.add(join(p, "minimum"), "must be 0..%d (the negative-caching TTL), got %d", maxNegativeTTL, s.Minimum)
	}
	if s.TTL > maxTTL {
		v.add(join(p, "ttl"), "must be 0..%d, got %d", maxTTL, s.TTL)
	}
}

// setKey identifies a record set within its zone.
type setKey struct {
	owner string
	typ   RecordType
}

// validateRecordSets checks each record set of z, and the rules between them: one set per
// name and type, a CNAME alone at its name. apex is empty when the zone's name is invalid.
func (v *validator) validateRecordSets(z *Zone, p, apex string) {
	sets := map[setKey]int{}
	owners := map[string][]int{} // owner → indexes of the valid sets there
	for j := range z.RecordSets {
		rs := &z.RecordSets[j]
		rp := join(p, fmt.Sprintf("record_sets[%d]", j))
		owner := v.validateOwner(rs, rp, apex)
		typeOK := false
		switch {
		case rs.Type == "":
			v.add(join(rp, "type"), "required: A, AAAA, CNAME, TXT, MX or NS")
		case !isRecordType(rs.Type):
			v.add(join(rp, "type"), "must be A, AAAA, CNAME, TXT, MX or NS, got %q", rs.Type)
		default:
			typeOK = true
		}
		policy := rs.Policy
		switch policy {
		case "":
			policy = PolicySimple
		case PolicySimple, PolicyFailover, PolicyWeighted, PolicyMultivalue:
		default:
			v.add(join(rp, "policy"), "must be simple, failover, weighted or multivalue, got %q", rs.Policy)
		}
		if rs.TTL > maxTTL {
			v.add(join(rp, "ttl"), "must be 0..%d, got %d", maxTTL, rs.TTL)
		}
		if typeOK && owner != "" {
			v.validateTypeAtOwner(z, rs, rp, owner, apex, policy)
			if k, dup := sets[setKey{owner, rs.Type}]; dup {
				v.add(rp, "duplicate record set %s %s (also %s); put every value in one set", owner, rs.Type, v.setRef(k))
			} else {
				sets[setKey{owner, rs.Type}] = j
				for _, k := range owners[owner] {
					other := z.RecordSets[k].Type
					if rs.Type == TypeCNAME || other == TypeCNAME {
						v.add(rp, "a CNAME cannot share its name with another record set: %s has %s at %s", owner, other, v.setRef(k))
						break
					}
				}
				owners[owner] = append(owners[owner], j)
			}
		}
		v.validateRecords(rs, rp, policy, typeOK)
	}
}

// validateOwner checks a record set's name and returns it absolute, or "" when it is invalid
// or the zone's apex is unknown.
func (v *validator) validateOwner(rs *RecordSet, rp, apex string) string {
	if rs.Name == "" {
		v.add(join(rp, "name"), "required: a name relative to the zone (www), @ for the apex, or an absolute name with the final dot")
		return ""
	}
	if apex == "" {
		return ""
	}
	owner := ownerName(rs.Name, apex)
	if prob := nameProblem(owner); prob != "" {
		v.add(join(rp, "name"), "invalid name %q: %s", rs.Name, prob)
		return ""
	}
	if !inZone(owner, apex) {
		v.add(join(rp, "name"), "%s is not inside zone %s", owner, apex)
		return ""
	}
	return owner
}

// validateTypeAtOwner checks the rules that tie a record set's type to its name and policy.
func (v *validator) validateTypeAtOwner(z *Zone, rs *RecordSet, rp, owner, apex string, policy Policy) {
	switch rs.Type {
	case TypeCNAME:
		if owner == apex {
			v.add(join(rp, "type"), "a CNAME cannot be at the zone apex (it would hide the SOA and NS records)")
		}
		if policy == PolicyMultivalue {
			v.add(join(rp, "policy"), "multivalue cannot answer a CNAME (an answer holds one CNAME): use weighted or failover")
		}
		if policy == PolicySimple && len(rs.Records) > 1 {
			v.add(join(rp, "records"), "a simple CNAME record set holds exactly one record, got %d", len(rs.Records))
		}
	case TypeNS:
		if owner != apex {
			v.add(join(rp, "type"), "NS record sets are allowed only at the zone apex (delegation is not supported)")
		} else if len(z.NameServers) > 0 {
			v.add(rp, "the zone's name_servers already give its apex NS records: set one or the other")
		}
		if policy != PolicySimple {
			v.add(join(rp, "policy"), "NS record sets are answered whole: use simple, got %s", policy)
		}
	}
}

func isRecordType(t RecordType) bool {
	for _, rt := range recordTypes() {
		if t == rt {
			return true
		}
	}
	return false
}

// validateRecords checks the records of one set against its type and routing policy.
func (v *validator) validateRecords(rs *RecordSet, rp string, policy Policy, typeOK bool) {
	if len(rs.Records) == 0 {
		v.add(join(rp, "records"), "at least one record is required")
		return
	}
	values := map[string]int{}
	primaries, secondaries, badRoles := 0, 0, 0
	for k := range rs.Records {
		r := &rs.Records[k]
		p := join(rp, fmt.Sprintf("records[%d]", k))
		switch {
		case r.Value == "":
			v.add(join(p, "value"), "required")
		case !typeOK:
		case valueProblem(rs.Type, r.Value) != "":
			v.add(join(p, "value"), "%s", valueProblem(rs.Type, r.Value))
		default:
			cv := canonicalValue(rs.Type, r.Value)
			if first, dup := values[cv]; dup {
				v.add(join(p, "value"), "duplicate value %q (also records[%d])", r.Value, first)
			} else {
				values[cv] = k
			}
		}
		if r.HealthCheck != "" {
			if !v.hasCheck(r.HealthCheck) {
				v.add(join(p, "health_check"), "no check has id %q", r.HealthCheck)
			} else if policy == PolicySimple {
				v.add(join(p, "health_check"), "a simple record set answers every record, healthy or not: use multivalue to answer only healthy records")
			}
		}
		switch {
		case policy == PolicyWeighted && r.Weight == nil:
			v.add(join(p, "weight"), "required in a weighted record set: 0..255")
		case policy == PolicyWeighted && (*r.Weight < 0 || *r.Weight > 255):
			v.add(join(p, "weight"), "must be 0..255, got %d", *r.Weight)
		case policy != PolicyWeighted && r.Weight != nil:
			v.add(join(p, "weight"), "only weighted record sets use weight (this one is %s)", policy)
		}
		switch {
		case policy != PolicyFailover && r.Role != "":
			v.add(join(p, "role"), "only failover record sets use role (this one is %s)", policy)
		case policy != PolicyFailover:
		case r.Role == RolePrimary:
			primaries++
		case r.Role == RoleSecondary:
			secondaries++
		case r.Role == "":
			v.add(join(p, "role"), "required in a failover record set: primary or secondary")
			badRoles++
		default:
			badRoles++
			v.add(join(p, "role"), "must be primary or secondary, got %q", r.Role)
		}
	}
	if policy == PolicyFailover && badRoles == 0 {
		if primaries != 1 {
			v.add(join(rp, "records"), "a failover record set needs exactly one primary, got %d", primaries)
		}
		if secondaries > 1 {
			v.add(join(rp, "records"), "a failover record set has at most one secondary, got %d", secondaries)
		}
	}
}
