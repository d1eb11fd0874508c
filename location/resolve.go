package location

import (
	"math/rand/v2"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/routing"
)

// maxChain bounds the CNAME chain a response follows, and the aliases an alias follows.
const maxChain = 8

// zoneOf returns the hosted zone that name (lower case, absolute) falls in: the one with the
// longest apex, or nil.
func (snap *Snapshot) zoneOf(name string) *zone {
	if len(snap.zones) == 0 {
		return nil
	}
	skip := dns.CountLabel(name) - snap.maxLabels
	for off, end := 0, false; !end; off, end = dns.NextLabel(name, off) {
		if skip > 0 {
			skip--
			continue
		}
		if z := snap.zones[name[off:]]; z != nil {
			return z
		}
	}
	return nil
}

// zoneFor returns the hosted zone that answers qtype at name on the listener of virtual name
// server ns: the nearest zone served there, so that a name server of a parent zone and not of
// a child hosted beside it answers the parent's referral to the child, as the parent wrote it;
// and DS at the apex of a zone is the parent's to answer when the parent is served there too
// (RFC 4035 §3.1.4.1). When no zone that holds name is served on ns, the nearest is returned
// (and refused).
func (snap *Snapshot) zoneFor(name string, qtype uint16, ns int) *zone {
	z := snap.zoneOf(name)
	if z == nil || z.servedOn(ns) && (qtype != dns.TypeDS || z.name != name) {
		return z
	}
	for above := z; ; {
		off, end := dns.NextLabel(above.name, 0)
		if end {
			return z
		}
		if above = snap.zoneOf(above.name[off:]); above == nil {
			return z
		}
		if above.servedOn(ns) {
			return above
		}
	}
}

// servedOn reports whether zone z is answered on the listener of virtual name server ns; -1,
// the main listener, answers every zone.
func (z *zone) servedOn(ns int) bool { return ns < 0 || z.shard[ns] }

// lookup returns the node that answers name (in the zone, lower case, absolute): its own, or
// when the zone has no such name, the wildcard that covers it, "*.<closest encloser>" (RFC
// 4592 §3.3.1); wild says which. nil means the name does not exist.
func (z *zone) lookup(name string) (n *node, wild bool) {
	if n := z.names[name]; n != nil {
		return n, false
	}
	if !z.wild {
		return nil, false
	}
	for off, end := dns.NextLabel(name, 0); !end; off, end = dns.NextLabel(name, off) {
		if anc := name[off:]; z.names[anc] != nil {
			// The closest encloser: a wildcard below it is the source of synthesis.
			return z.names["*."+anc], true
		}
	}
	return nil, false
}

// resolve fills the response's sections for name and qtype, starting in zone z, and returns
// the rcode. A CNAME chain is followed from zone to zone among the zones served on the
// listener of virtual name server ns, each name answered by the nearest zone (RFC 1034
// §4.3.2), so that a parent's data at or below a child zone it hosts is never served.
func (s *Server) resolve(scr *scratch, snap *Snapshot, z *zone, name string, qtype uint16, ns int) int {
	resp := &scr.resp
	v := s.verdicts.Load()
	for hop := 0; ; hop++ {
		scr.visited[hop] = name
		if z.cuts {
			if at, cut := z.cutAbove(name); cut != nil {
				return scr.atCut(z, name, qtype, at, cut, hop)
			}
		}
		n, wild := z.lookup(name)
		if n == nil {
			scr.deny(z, name, nil, qtype)
			return dns.RcodeNameError
		}
		owner := ""
		if wild {
			owner = name
		}
		rs := n.find(qtype)
		if qtype == dns.TypeANY && len(n.sets) > 0 {
			// RFC 8482: a minimal answer, one record set of the name.
			rs = n.sets[0]
		}
		if rs != nil {
			return s.answerSet(scr, z, n, rs, name, owner, v)
		}
		cname := n.cname()
		if cname == nil || qtype == dns.TypeCNAME {
			// NODATA: the name exists, the type does not.
			scr.deny(z, name, n, qtype)
			return dns.RcodeSuccess
		}
		before := len(resp.Answer)
		var ok bool
		if resp.Answer, ok = s.appendSelected(resp.Answer, scr, cname, v, owner); !ok || len(resp.Answer) == before {
			return dns.RcodeServerFailure
		}
		target := resp.Answer[len(resp.Answer)-1].(*dns.CNAME).Target
		if hop+1 >= maxChain || seen(scr.visited[:hop+1], target) {
			return dns.RcodeSuccess
		}
		next := snap.zoneFor(target, qtype, ns)
		if next == nil || !next.servedOn(ns) {
			// Out of every zone served here: the resolver follows from here.
			return dns.RcodeSuccess
		}
		scr.inZone(next)
		z, name = next, target
	}
}

// atCut answers name, at or below the zone cut at (whose NS record set is cut) in z: DS at
// the cut from the parent's side, else a referral, not authoritative when it is the first
// name of the answer (hop 0).
func (scr *scratch) atCut(z *zone, name string, qtype uint16, at string, cut *rrset, hop int) int {
	resp := &scr.resp
	if qtype == dns.TypeDS && at == name {
		// The parent side of the cut answers DS (RFC 4035 §3.1.4.1).
		if ds := z.names[name].find(dns.TypeDS); ds != nil {
			resp.Answer = append(resp.Answer, ds.rrs...)
		} else {
			scr.deny(z, name, z.names[name], dns.TypeDS)
		}
		return dns.RcodeSuccess
	}
	// A delegation: not ours to answer, say where to ask. After a CNAME the
	// answer keeps its records, and the referral follows them.
	if hop == 0 {
		resp.Authoritative = false
	}
	resp.Ns = append(resp.Ns, cut.rrs...)
	resp.Extra = z.appendGlue(resp.Extra, cut.rrs)
	return dns.RcodeSuccess
}

// answerSet adds the record set rs of node n of name in z to the answer: the records its
// policy selects under the verdicts v (owned by owner when synthesized from a wildcard), or
// its alias target's, then their additional data; an empty selection answers no data.
func (s *Server) answerSet(scr *scratch, z *zone, n *node, rs *rrset, name, owner string, v *verdicts) int {
	resp := &scr.resp
	from := len(resp.Answer)
	ok := true
	if rs.cfg.Alias != "" {
		ok = s.appendAlias(scr, z, rs, name, v)
		if !ok {
			// An alias whose target has no such record set answers no data.
			scr.deny(z, name, n, rs.rtype)
			return dns.RcodeSuccess
		}
	} else {
		resp.Answer, ok = s.appendSelected(resp.Answer, scr, rs, v, owner)
	}
	if !ok {
		return dns.RcodeServerFailure
	}
	if len(resp.Answer) == from {
		// No healthy record and the set answers no data (config.NoHealthyNoData): a denial
		// of the type at the name, which a signed zone proves as any other.
		scr.deny(z, name, n, rs.rtype)
		return dns.RcodeSuccess
	}
	s.appendAdditional(scr, z, v, from)
	return dns.RcodeSuccess
}

// seen reports whether name is among names.
func seen(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// appendSelected appends to dst the records the routing policy chooses from rs, renamed to
// owner when owner is not empty (a wildcard's or an alias's answer). It reports false when
// the record set cannot be answered (a policy the selection does not know).
func (s *Server) appendSelected(dst []dns.RR, scr *scratch, rs *rrset, v *verdicts, owner string) ([]dns.RR, bool) {
	from := len(dst)
	if rs.rtype == dns.TypeSOA {
		dst = append(dst, rs.in.servedSOA())
	} else if rs.cfg.Policy == "" || rs.cfg.Policy == config.PolicySimple {
		dst = append(dst, rs.rrs...)
	} else if rs.cfg.Policy == config.PolicyNearest {
		dst = s.appendNearest(dst, scr, rs, v)
	} else {
		if (rs.cfg.Policy == config.PolicyWeighted || rs.cfg.Policy == config.PolicyMultivalue) && len(rs.cfg.Records) > 1 {
			// Chosen at random for each query.
			scr.noCache()
		}
		idx, rule, err := routing.Select(rs.cfg, v.health, rand.Uint64(), scr.idx[:0])
		if err != nil {
			scr.noCache()
			s.log.Error("location: answer selection failed", "record_set", rs.label(), "err", err)
			return dst, false
		}
		scr.idx = idx[:0]
		for _, i := range idx {
			dst = append(dst, rs.rrs[i])
		}
		if rule.LastResort() {
			scr.lastResort(s.metrics, rs)
		}
	}
	if owner != "" {
		for i := from; i < len(dst); i++ {
			rr := dns.Copy(dst[i])
			rr.Header().Name = owner
			dst[i] = rr
		}
	}
	return dst, true
}

// appendAlias appends the answer of alias set rs at owner: the records its target's record
// set of the same type chooses by the target's policy and health, renamed to owner, following
// aliases up to maxChain. It reports false when there is no such target record set.
func (s *Server) appendAlias(scr *scratch, z *zone, rs *rrset, owner string, v *verdicts) bool {
	resp := &scr.resp
	target := rs.cfg.Alias
	for range maxChain {
		if z.cuts {
			if _, cut := z.cutAbove(target); cut != nil {
				return false
			}
		}
		tn, _ := z.lookup(target)
		if tn == nil {
			return false
		}
		ts := tn.find(rs.rtype)
		switch {
		case ts == nil:
			return false
		case ts.cfg.Alias != "":
			target = ts.cfg.Alias
			continue
		}
		before := len(resp.Answer)
		var ok bool
		resp.Answer, ok = s.appendSelected(resp.Answer, scr, ts, v, owner)
		return ok && len(resp.Answer) > before
	}
	return false
}

// appendAdditional appends to the additional section the addresses the zone holds for the
// names that the answer's NS, MX and SRV records from index from on point at (RFC 1035 §3.3,
// RFC 2782): optional data, that finish leaves out when it does not fit.
func (s *Server) appendAdditional(scr *scratch, z *zone, v *verdicts, from int) {
	resp := &scr.resp
	answer := resp.Answer[from:]
	for i, rr := range answer {
		var target string
		switch rr := rr.(type) {
		case *dns.NS:
			target = rr.Ns
		case *dns.MX:
			target = rr.Mx
		case *dns.SRV:
			target = rr.Target
		default:
			continue
		}
		if target == "." || !dns.IsSubDomain(z.name, target) || namedBefore(answer[:i], target) {
			continue
		}
		if z.cuts {
			if _, cut := z.cutAbove(target); cut != nil {
				continue
			}
		}
		n := z.names[target]
		if n == nil {
			continue
		}
		for _, t := range [2]uint16{dns.TypeA, dns.TypeAAAA} {
			if rs := n.find(t); rs != nil && rs.cfg.Alias == "" {
				resp.Extra, _ = s.appendSelected(resp.Extra, scr, rs, v, "")
			}
		}
	}
}

// namedBefore reports whether one of rrs (NS, MX or SRV records) points at target.
func namedBefore(rrs []dns.RR, target string) bool {
	for _, rr := range rrs {
		switch rr := rr.(type) {
		case *dns.NS:
			if rr.Ns == target {
				return true
			}
		case *dns.MX:
			if rr.Mx == target {
				return true
			}
		case *dns.SRV:
			if rr.Target == target {
				return true
			}
		}
	}
	return false
}

// cutAbove returns the delegation (NS record set below the apex) at or above name, and the
// name it is at; nil when there is none.
func (z *zone) cutAbove(name string) (string, *rrset) {
	for off, end := 0, false; !end; off, end = dns.NextLabel(name, off) {
		n := name[off:]
		if n == z.name {
			return "", nil
		}
		if node := z.names[n]; node != nil {
			if cut := node.cut(); cut != nil {
				return n, cut
			}
		}
	}
	return "", nil
}

// appendGlue appends the addresses the zone holds for the in-zone name servers that nsRRs
// name: the glue of a referral.
func (z *zone) appendGlue(extra []dns.RR, nsRRs []dns.RR) []dns.RR {
	for _, rr := range nsRRs {
		target := rr.(*dns.NS).Ns
		if !dns.IsSubDomain(z.name, target) {
			continue
		}
		if n := z.names[target]; n != nil {
			for _, t := range [2]uint16{dns.TypeA, dns.TypeAAAA} {
				if rs := n.find(t); rs != nil {
					extra = append(extra, rs.rrs...)
				}
			}
		}
	}
	return extra
}

// isWildcard reports whether name's first label is "*".
func isWildcard(name string) bool { return strings.HasPrefix(name, "*.") }
