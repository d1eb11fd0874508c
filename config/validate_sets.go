package config

import (
	"fmt"
	"slices"
	"strings"
)

// setKey identifies a record set within its zone.
type setKey struct {
	owner string
	typ   RecordType
}

// validateRecordSets checks each record set of z, and the rules between the sets of one name:
// one set per name and type, a CNAME alone at its name, a delegation (NS below the apex)
// beside DS and glue only, DS only beside such an NS. apex is empty when the zone's name is
// invalid.
func (v *validator) validateRecordSets(z *Zone, p, apex string) {
	sets := map[setKey]int{}
	owners := map[string][]int{} // owner → indexes of the valid sets there
	ownerOf := make([]string, len(z.RecordSets))
	for j := range z.RecordSets {
		rs := &z.RecordSets[j]
		rp := join(p, fmt.Sprintf("record_sets[%d]", j))
		owner := v.validateOwner(rs, rp, apex)
		typeOK := false
		switch {
		case rs.Type == "":
			v.add(join(rp, "type"), "required: %s", recordTypeList)
		case !isRecordType(rs.Type):
			v.add(join(rp, "type"), "must be %s, got %q", recordTypeList, rs.Type)
		default:
			typeOK = true
		}
		policy := rs.Policy
		switch policy {
		case "":
			policy = PolicySimple
		case PolicySimple, PolicyFailover, PolicyWeighted, PolicyMultivalue, PolicyNearest:
		default:
			v.add(join(rp, "policy"), "must be simple, failover, weighted, multivalue or nearest, got %q", rs.Policy)
		}
		if rs.TTL != nil && *rs.TTL > maxTTL {
			v.add(join(rp, "ttl"), "must be 0..%d, got %d", maxTTL, *rs.TTL)
		}
		if rs.ManagedBy != "" && !ValidManagedBy(rs.ManagedBy) {
			v.add(join(rp, "managed_by"), "%q: want 1 to %d letters, digits and - . _ / (an owner name such as external-dns), or leave it out", rs.ManagedBy, maxManagerLen)
		}
		if typeOK && owner != "" {
			v.validateTypeAtOwner(z, rs, rp, owner, apex, policy)
			if k, dup := sets[setKey{owner, rs.Type}]; dup {
				v.add(rp, "duplicate record set %s %s (also %s); put every value in one set", owner, rs.Type, v.setRef(k))
			} else {
				sets[setKey{owner, rs.Type}] = j
				ownerOf[j] = owner
				for _, k := range owners[owner] {
					if msg := pairProblem(owner, apex, rs.Type, z.RecordSets[k].Type, v.setRef(k)); msg != "" {
						v.add(rp, "%s", msg)
						break
					}
				}
				owners[owner] = append(owners[owner], j)
			}
		}
		v.validateRecords(rs, rp, owner, policy, typeOK)
		v.validateNoHealthy(rs, rp, policy, typeOK)
	}
	for j := range z.RecordSets {
		rs := &z.RecordSets[j]
		if rs.Type != TypeDS || ownerOf[j] == "" || ownerOf[j] == apex {
			continue
		}
		if _, ok := sets[setKey{ownerOf[j], TypeNS}]; !ok {
			v.add(join(join(p, fmt.Sprintf("record_sets[%d]", j)), "type"),
				"a DS record set sits at a delegation (RFC 4035 §2.4): %s needs an NS record set", ownerOf[j])
		}
	}
}

// pairProblem says why record sets of types a and b cannot share the name owner (the other
// one named ref), or returns "".
func pairProblem(owner, apex string, a, b RecordType, ref string) string {
	if a == TypeCNAME || b == TypeCNAME {
		return fmt.Sprintf("a CNAME cannot share its name with another record set: %s has %s at %s", owner, b, ref)
	}
	if owner == apex || (a != TypeNS && b != TypeNS) {
		return ""
	}
	other := a
	if a == TypeNS {
		other = b
	}
	switch other {
	case TypeNS, TypeDS, TypeA, TypeAAAA:
		return ""
	}
	return fmt.Sprintf("%s is delegated (an NS record set below the apex): beside the NS only DS and A or AAAA glue are served, not %s (%s has %s)", owner, other, ref, b)
}

// validateOwner checks a record set's name and returns it absolute, or "" when it is invalid
// or the zone's apex is unknown. A first label "*" makes a wildcard.
func (v *validator) validateOwner(rs *RecordSet, rp, apex string) string {
	if rs.Name == "" {
		v.add(join(rp, "name"), "required: a name relative to the zone (www), @ for the apex, or an absolute name with the final dot")
		return ""
	}
	if apex == "" {
		return ""
	}
	owner := ownerName(rs.Name, apex)
	if prob := nameProblem(strings.TrimPrefix(owner, "*.")); prob != "" {
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
	wildcard := strings.HasPrefix(owner, "*.")
	switch rs.Type {
	case TypeCNAME:
		if owner == apex {
			v.add(join(rp, "type"), "a CNAME cannot be at the zone apex (it would hide the SOA and NS records): use an A or AAAA record set with alias")
		}
		if policy == PolicyMultivalue {
			v.add(join(rp, "policy"), "multivalue cannot answer a CNAME (an answer holds one CNAME): use weighted or failover")
		}
		if policy == PolicySimple && len(rs.Records) > 1 {
			v.add(join(rp, "records"), "a simple CNAME record set holds exactly one record, got %d", len(rs.Records))
		}
	case TypeNS, TypeDS:
		switch {
		case wildcard:
			v.add(join(rp, "type"), "%s record sets cannot be at a wildcard name: a delegation names one child zone", rs.Type)
		case rs.Type == TypeDS && owner == apex:
			v.add(join(rp, "type"), "the DS record set of a zone's apex belongs in its parent zone")
		case rs.Type == TypeNS && owner == apex && len(z.NameServers) > 0:
			v.add(rp, "the zone's name_servers already give its apex NS records: set one or the other")
		}
		if policy != PolicySimple {
			v.add(join(rp, "policy"), "%s record sets are answered whole: use simple, got %s", rs.Type, policy)
		}
	}
	if rs.Alias != "" {
		v.validateAlias(rs, rp, owner, apex, policy)
	}
}

// validateAlias checks an alias record set: A or AAAA, no records, TTL or policy of its own,
// and a target inside the zone other than itself.
func (v *validator) validateAlias(rs *RecordSet, rp, owner, apex string, policy Policy) {
	if rs.Type != TypeA && rs.Type != TypeAAAA {
		v.add(join(rp, "alias"), "only A and AAAA record sets may be aliases, this one is %s", rs.Type)
	}
	if policy != PolicySimple {
		v.add(join(rp, "policy"), "an alias answers by its target's policy: leave policy out, got %s", policy)
	}
	if rs.TTL != nil {
		v.add(join(rp, "ttl"), "an alias answers with its target's TTL: leave ttl out")
	}
	target := ownerName(rs.Alias, apex)
	switch {
	case nameProblem(target) != "":
		v.add(join(rp, "alias"), "invalid name %q: %s", rs.Alias, nameProblem(target))
	case !inZone(target, apex):
		v.add(join(rp, "alias"), "%s is not inside zone %s: an alias names a record set of its own zone", target, apex)
	case target == owner:
		v.add(join(rp, "alias"), "an alias cannot name its own record set")
	}
}

func isRecordType(t RecordType) bool { return slices.Contains(recordTypes(), t) }

// maxManagerLen bounds a record set's managed_by.
const maxManagerLen = 63

// ValidManagedBy reports whether s may be a record set's managed_by: a short name of
// printable characters that no table or log line can mistake for something else.
func ValidManagedBy(s string) bool {
	if len(s) == 0 || len(s) > maxManagerLen {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '/':
		default:
			return false
		}
	}
	return true
}
