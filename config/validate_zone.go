package config

import (
	"fmt"
	"strings"
)

// recordTypes are the types a record set may have, in the order error messages list them.
func recordTypes() []RecordType {
	return []RecordType{TypeA, TypeAAAA, TypeCNAME, TypeTXT, TypeMX, TypeNS, TypeSRV, TypeCAA, TypePTR, TypeDS}
}

// recordTypeList is recordTypes in words.
const recordTypeList = "A, AAAA, CNAME, TXT, MX, NS, SRV, CAA, PTR or DS"

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
	v.validateTransfers(z, p)
	if d := z.DNSSEC; d != nil {
		if d.Keys != "" && d.Keys != "combined" && d.Keys != "split" {
			v.add(join(p, "dnssec.keys"), "must be combined or split, got %q", d.Keys)
		}
		if d.Denial != "" && d.Denial != DenialCompact && d.Denial != DenialNSEC {
			v.add(join(p, "dnssec.denial"), "must be %s or %s, got %q", DenialCompact, DenialNSEC, d.Denial)
		}
		if d.DNSKEYTTL > maxTTL {
			v.add(join(p, "dnssec.dnskey_ttl"), "must be 0..%d, got %d", maxTTL, d.DNSKEYTTL)
		}
	}
	v.validateRecordSets(z, p, apex)
	v.validateServed(z, p, apex)
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
