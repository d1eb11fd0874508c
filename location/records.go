package location

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
	"github.com/vigil-dns/vigil/location/routing"
)

// buildRecords compiles the records of cs into rs: each value by rdata.Parse, with the set's
// TTL (the zone's when the set has none).
func (z *zone) buildRecords(rs *rrset, cs *config.RecordSet) error {
	name := rs.cfg.Name
	if len(cs.Records) == 0 {
		return fmt.Errorf("%s %s: no records", name, cs.Type)
	}
	ttl := cs.EffectiveTTL(z.ttl)
	for i, r := range cs.Records {
		rr, err := rdata.Parse(name, rs.rtype, ttl, r.Value)
		if err != nil {
			return fmt.Errorf("%s %s: records[%d]: %w", name, cs.Type, i, err)
		}
		rs.rrs = append(rs.rrs, rr)
		if r.HealthCheck != "" && cs.Policy != config.PolicySimple && cs.Policy != "" {
			rs.health = true
		}
	}
	if rs.rtype == dns.TypeCNAME && len(rs.rrs) > 1 && (cs.Policy == "" || cs.Policy == config.PolicySimple || cs.Policy == config.PolicyMultivalue) {
		return fmt.Errorf("%s CNAME: only one CNAME may be answered; use a weighted or failover policy for several", name)
	}
	if cs.NoHealthy == config.NoHealthyFallback && cs.Fallback != "" {
		// Index len(cs.Records): what routing answers when no record is healthy.
		rr, err := rdata.Parse(name, rs.rtype, ttl, cs.Fallback)
		if err != nil {
			return fmt.Errorf("%s %s: fallback: %w", name, cs.Type, err)
		}
		rs.rrs = append(rs.rrs, rr)
	}
	if _, _, err := routing.Select(rs.cfg, nil, 0, nil); err != nil {
		return fmt.Errorf("%s %s: %w", name, cs.Type, err)
	}
	return nil
}

// addAlias makes rs an alias of the record set of its type at cs.Alias, a name of the zone.
func (z *zone) addAlias(rs *rrset, cs *config.RecordSet) error {
	if rs.rtype != dns.TypeA && rs.rtype != dns.TypeAAAA {
		return fmt.Errorf("only A and AAAA record sets may be aliases")
	}
	if len(cs.Records) > 0 {
		return fmt.Errorf("an alias has no records of its own")
	}
	target := config.OwnerName(cs.Alias, z.name)
	if !dns.IsSubDomain(z.name, target) || strings.HasPrefix(target, "*.") {
		return fmt.Errorf("alias %s: not a name of the zone", target)
	}
	if rs.cfg.Alias != target {
		c := *rs.cfg
		c.Alias = target
		rs.cfg = &c
	}
	return nil
}

// apexNS returns the NS records of the zone's own NS record set at its apex, or nil when it
// has none: written there, they are the zone's NS records, answered as written (its shard,
// if any, still says which virtual name servers answer the zone).
func apexNS(sets []*config.RecordSet, zoneTTL uint32, apex string) ([]dns.RR, error) {
	for _, cs := range sets {
		if !strings.EqualFold(string(cs.Type), string(config.TypeNS)) || config.OwnerName(cs.Name, apex) != apex {
			continue
		}
		var out []dns.RR
		for j, r := range cs.Records {
			rr, err := rdata.Parse(apex, dns.TypeNS, cs.EffectiveTTL(zoneTTL), r.Value)
			if err != nil {
				return nil, fmt.Errorf("%s NS: records[%d]: %w", apex, j, err)
			}
			out = append(out, rr)
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, nil
}
