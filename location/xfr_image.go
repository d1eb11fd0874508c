package location

import (
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location/routing"
)

// A zone's image is what a transfer of it carries, but its SOA: the zone as this location
// answers it now. Each record set is resolved as a query would find it, with every record a
// query could be answered with:
//
//   - simple: every record; failover: the record in force (the fallback when it is answered);
//   - weighted: every record a query's answer is chosen from: the healthy records of weight
//     above 0, else the healthy ones of weight 0, else (last resort) every record of weight
//     above 0, else every record; the weights are lost, so the secondary answers each with
//     its own rotation;
//   - multivalue: every healthy record, or, in last resort, every record; not cut to eight;
//   - no_healthy nodata: no record; fallback: the fallback record;
//   - nearest: the region this location answers from;
//   - an alias: its target's records, under the alias's name;
//   - a CNAME set with several records chosen: the one of largest weight (a name holds one
//     CNAME);
//   - wildcards as written, resolved as any set; delegations (NS below the apex, DS) and
//     the records below them (glue) as written.
//
// A record set that answers nothing now is absent, and a name left without record sets
// answers NXDOMAIN at the secondary where the location answers NODATA. A signed zone's image
// also holds its DNSKEY set, an RRSIG for every authoritative record set, and a chain of
// NSEC records over its names, signed: a secondary serves it validly without the keys.

// buildImage returns zone z's image under verdicts v, signed by sg when not nil, at now;
// names are z's names in canonical order (canonicalNames).
func (s *Server) buildImage(z *zone, names []string, v *verdicts, sg *dnssec.Signer, now time.Time) ([]dns.RR, error) {
	var out []dns.RR
	type owner struct {
		name  string
		types []uint16
	}
	var chain []owner
	scr := newScratch()
	for _, name := range names {
		n := z.names[name]
		var at string
		var cut *rrset
		if z.cuts {
			at, cut = z.cutAbove(name)
		}
		below := cut != nil && at != name
		isCut := cut != nil && at == name
		var types []uint16
		for _, rs := range n.sets {
			if rs.rtype == dns.TypeSOA {
				types = append(types, dns.TypeSOA)
				continue
			}
			rrs := rs.rrs
			if !below && !isCut {
				rrs = s.transferSet(scr, z, rs, name, v)
			}
			if len(rrs) == 0 {
				continue
			}
			out = append(out, rrs...)
			if !isCut || rs.rtype == dns.TypeNS || rs.rtype == dns.TypeDS {
				types = append(types, rs.rtype) // glue at a cut is not in its NSEC (nodeTypes)
			}
			if sg != nil && !below && (!isCut || rs.rtype == dns.TypeDS) {
				var err error
				if out, err = sg.AppendSignatures(out, rrs, now, nil); err != nil {
					return nil, err
				}
			}
		}
		if !below && len(types) > 0 {
			chain = append(chain, owner{name, types})
		}
	}
	if sg == nil {
		return out, nil
	}
	keys := sg.AppendDNSKEYs(nil, now)
	out = append(out, keys...)
	var err error
	if out, err = sg.AppendSignatures(out, keys, now, nil); err != nil {
		return nil, err
	}
	for i, o := range chain {
		types := append(o.types, dns.TypeNSEC, dns.TypeRRSIG)
		if o.name == z.name {
			types = append(types, dns.TypeDNSKEY)
		}
		slices.Sort(types)
		nsec := &dns.NSEC{Hdr: hdr(o.name, dns.TypeNSEC, z.negTTL), NextDomain: chain[(i+1)%len(chain)].name,
			TypeBitMap: slices.Compact(types)}
		out = append(out, nsec)
		if out, err = sg.AppendSignatures(out, []dns.RR{nsec}, now, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// transferSet returns the records of rs, at name in z, that a transfer carries under the
// verdicts v (see the comment above buildImage).
func (s *Server) transferSet(scr *scratch, z *zone, rs *rrset, name string, v *verdicts) []dns.RR {
	if rs.cfg.Alias == "" {
		return s.transferRecords(scr, rs, v)
	}
	target := rs.cfg.Alias
	for range maxChain {
		if z.cuts {
			if _, cut := z.cutAbove(target); cut != nil {
				return nil
			}
		}
		tn, _ := z.lookup(target)
		if tn == nil {
			return nil
		}
		ts := tn.find(rs.rtype)
		if ts == nil {
			return nil
		}
		if ts.cfg.Alias != "" {
			target = ts.cfg.Alias
			continue
		}
		rrs := s.transferRecords(scr, ts, v)
		out := make([]dns.RR, len(rrs))
		for i, rr := range rrs {
			out[i] = dns.Copy(rr)
			out[i].Header().Name = name
		}
		return out
	}
	return nil
}

// transferRecords returns the records of rs (not an alias) that a transfer carries under
// the verdicts v.
func (s *Server) transferRecords(scr *scratch, rs *rrset, v *verdicts) []dns.RR {
	var idx []int
	switch rs.cfg.Policy {
	case "", config.PolicySimple:
		return rs.rrs
	case config.PolicyNearest:
		return s.appendNearest(nil, scr, rs, v)
	case config.PolicyFailover:
		sel, _, err := routing.Select(rs.cfg, v.health, 0, nil)
		if err != nil {
			return nil
		}
		idx = sel
	default:
		res, err := routing.Explain(rs.cfg, v.health, 0)
		if err != nil {
			return nil
		}
		switch {
		case res.Rule == routing.RuleNoData:
		case res.Rule == routing.RuleFallback:
			idx = res.Answer
		case rs.cfg.Policy == config.PolicyWeighted:
			idx = weightedPool(res.Candidates)
		default:
			for _, c := range res.Candidates {
				if c.Eligible && (res.LastResort || c.Health.Healthy()) {
					idx = append(idx, c.Index)
				}
			}
		}
	}
	if rs.rtype == dns.TypeCNAME && len(idx) > 1 {
		best := idx[0]
		for _, i := range idx[1:] {
			if recordWeight(rs.cfg, i) > recordWeight(rs.cfg, best) {
				best = i
			}
		}
		idx = []int{best}
	}
	out := make([]dns.RR, 0, len(idx))
	for _, i := range idx {
		if i < len(rs.rrs) {
			out = append(out, rs.rrs[i])
		}
	}
	return out
}

// weightedPool returns the indices of the candidates of a weighted set that its answers are
// chosen from (routing's choice of one): the healthy records of weight above 0; else the
// healthy records of weight 0; else, in last resort, every record of weight above 0; else
// every record.
func weightedPool(cands []routing.Candidate) []int {
	for _, in := range []func(c routing.Candidate) bool{
		func(c routing.Candidate) bool { return c.Weight > 0 && c.Health.Healthy() },
		func(c routing.Candidate) bool { return c.Weight == 0 && c.Health.Healthy() },
		func(c routing.Candidate) bool { return c.Weight > 0 },
		func(routing.Candidate) bool { return true },
	} {
		var idx []int
		for _, c := range cands {
			if in(c) {
				idx = append(idx, c.Index)
			}
		}
		if len(idx) > 0 {
			return idx
		}
	}
	return nil
}

// recordWeight returns the weight of record i of rs, 0 when it has none (or is the fallback).
func recordWeight(rs *config.RecordSet, i int) int {
	if i < len(rs.Records) && rs.Records[i].Weight != nil {
		return *rs.Records[i].Weight
	}
	return 0
}

// canonicalNames returns the names of z in the order of DNSSEC (RFC 4034 §6.1): label by
// label from the right, each compared as lower-case bytes, a name before the names below it.
// Each name is sorted by a key of its labels reversed, each ended by a zero byte, which
// orders as the labels do; a zone's names are sorted once per compiled zone (zoneVersion).
func canonicalNames(z *zone) []string {
	type keyed struct{ key, name string }
	ks := make([]keyed, 0, len(z.names))
	var b strings.Builder
	for name := range z.names {
		labels := dns.SplitDomainName(strings.ToLower(name))
		b.Reset()
		for i := len(labels) - 1; i >= 0; i-- {
			b.WriteString(labels[i])
			b.WriteByte(0)
		}
		ks = append(ks, keyed{b.String(), name})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.name
	}
	return out
}
