package location

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/dnssec"
)

// denial is where an answer denies a name (node nil: the name does not exist) or type
// rtype at a name of zone z; z nil when the answer denies nothing.
type denial struct {
	z     *zone
	name  string
	node  *node
	rtype uint16
}

// deny puts zone z's negative SOA in the authority section, and records that the answer
// denies name (n nil) or type rtype at name (n its node), for its NSEC proof.
func (scr *scratch) deny(z *zone, name string, n *node, rtype uint16) {
	scr.resp.Ns = append(scr.resp.Ns, z.negSOA())
	scr.denial = denial{z: z, name: name, node: n, rtype: rtype}
}

// answerZone fills the response for name and qtype in zone z, on the listener of virtual
// name server ns: the DNSKEY set at the apex of a signed zone, anything else by resolve; with
// do (the query's DO bit), signed. ok is false when the answer needs a signature the zone's
// signing budget does not allow now.
func (s *Server) answerZone(scr *scratch, snap *Snapshot, z *zone, name string, qtype uint16, ns int, do bool) (rcode int, ok bool) {
	if sg := s.signerOf(z.name); sg != nil && qtype == dns.TypeDNSKEY && name == z.name {
		scr.resp.Answer = sg.AppendDNSKEYs(scr.resp.Answer, s.now())
		// The keys published change with time (rollovers): the cached answer expires.
		scr.fill.signed = true
	} else {
		rcode = s.resolve(scr, snap, z, name, qtype, ns)
	}
	if !do {
		return rcode, true
	}
	return s.sign(scr, snap, rcode)
}

// signDropLogEvery is the least time between two log lines about queries dropped for a
// spent signing budget: a flood drops thousands a second, the log says so once in a while.
const signDropLogEvery = 10 * time.Second

// dropUnsigned drops a query whose answer cannot be signed now, the location's signing budget
// (Config.SignBudget) being spent: it is not sent unsigned (a validator would call it bogus),
// as the rate limiter drops. The drop is counted
// (vigil_location_queries_dropped_total{reason="sign_budget"}) and logged at most once every
// signDropLogEvery, with the drops since the last line.
func (s *Server) dropUnsigned(scr *scratch, oc *outcome) ([]byte, outcome) {
	scr.keep()
	oc.drop, oc.answer = dropSignBudget, false
	s.signDrops.Add(1)
	now := s.now().UnixNano()
	last := s.signLogged.Load()
	if s.log != nil && now-last >= int64(signDropLogEvery) && s.signLogged.CompareAndSwap(last, now) {
		zone := ""
		if oc.zone != nil {
			zone = oc.zone.name
		}
		s.log.Warn("location: queries of signed zones dropped unanswered: the signing budget is spent",
			"zone", zone, "budget_per_second", s.budget.Rate(), "dropped", s.signDrops.Swap(0),
			"see", `vigil_location_queries_dropped_total{reason="sign_budget"}`)
	}
	return nil, *oc
}

// SetSigners installs the signers of the zones this location signs, by apex (any case, with
// or without the final dot): a query with the DO bit for a name of such a zone gets its
// record sets signed, its denials proved, and the zone's DNSKEY record set at its apex. A
// zone without a signer is answered unsigned. The server keeps its own copy of the map.
func (s *Server) SetSigners(signers map[string]*dnssec.Signer) {
	m := make(map[string]*dnssec.Signer, len(signers))
	for apex, sg := range signers {
		if sg != nil {
			m[canonical(apex)] = sg
		}
	}
	s.budget.SetZones(slices.Collect(maps.Keys(m)))
	s.signers.Store(&m)
	s.cache.invalidate()
	s.xfr.poke()
}

// SetUnsigned installs the zones that the control plane signs and this location cannot sign
// (any case, with or without the final dot), each with the reason: they are answered
// unsigned, which a validating resolver that trusts their DS calls bogus. ZoneStates names
// them, and the gauge vigil_location_dnssec_zone_unsigned is 1 for each. The server keeps
// its own copy of the map.
func (s *Server) SetUnsigned(reasons map[string]string) {
	m := make(map[string]string, len(reasons))
	for apex, why := range reasons {
		m[canonical(apex)] = why
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.unsigned.Load(); old != nil {
		for apex := range *old {
			if _, still := m[apex]; !still {
				s.metrics.unsigned.DeleteLabelValues(apex)
				s.log.Info("location: zone signed again", "zone", apex)
			}
		}
	}
	for apex, why := range m {
		s.metrics.unsigned.WithLabelValues(apex).Set(1)
		if old := s.unsigned.Load(); old == nil || (*old)[apex] != why {
			s.log.Error("location: a zone the control plane signs is answered unsigned here", "zone", apex, "reason", why)
		}
	}
	s.unsigned.Store(&m)
}

// Unsigned returns the zones that the control plane signs and this location cannot, with
// the reason, by apex (SetUnsigned).
func (s *Server) Unsigned() map[string]string {
	if m := s.unsigned.Load(); m != nil {
		return maps.Clone(*m)
	}
	return nil
}

// ZoneStates returns every zone of the configuration as this location serves it, as the
// snapshot's ZoneStates, with the reason of each zone it cannot sign (SetUnsigned).
func (s *Server) ZoneStates() []ZoneState {
	snap := s.Snapshot()
	if snap == nil {
		return nil
	}
	states := snap.ZoneStates()
	m := s.unsigned.Load()
	if m == nil || len(*m) == 0 {
		return states
	}
	for i := range states {
		states[i].Unsigned = (*m)[states[i].Zone]
	}
	return states
}

// Signers returns the signers in use, by apex.
func (s *Server) Signers() map[string]*dnssec.Signer {
	if m := s.signers.Load(); m != nil {
		return maps.Clone(*m)
	}
	return nil
}

// signerOf returns the signer of zone apex, or nil when it is not signed.
func (s *Server) signerOf(apex string) *dnssec.Signer {
	if m := s.signers.Load(); m != nil {
		return (*m)[apex]
	}
	return nil
}

// sign adds to the response the signatures of its record sets that signed zones own, the
// DS or the proof of no DS of a referral, and the NSEC proof of a denial, and returns the
// rcode: a name that does not exist in a signed zone is answered NOERROR with a black-lie
// NSEC (RFC 9824), never NXDOMAIN. ok is false when a signature was needed that the zone's
// signing budget does not allow now.
func (s *Server) sign(scr *scratch, snap *Snapshot, rcode int) (_ int, ok bool) {
	m := s.signers.Load()
	if m == nil || len(*m) == 0 {
		return rcode, true
	}
	ok = true
	now := s.now()
	resp := &scr.resp
	signedAnswer, wild := s.signAnswer(scr, snap, *m, now, &ok)
	ns, signedNs := s.signAuthority(resp.Ns, snap, *m, now, &ok)
	// The links of NSEC chains in the authority section, each once.
	var proved []chainLink
	for _, l := range wild {
		ns = s.appendLink(ns, (*m)[l.z.name], l, &proved, now, &ok)
	}
	ns, rcode, signedDenial := s.signDenial(ns, scr.denial, *m, &proved, rcode, now, &ok)
	if signedAnswer || signedNs || signedDenial {
		resp.Ns = ns
		scr.fill.signed = true
	}
	return rcode, ok
}

// signAnswer adds the signatures of the answer section's record sets that signed zones
// own, and returns whether it signed any and the NSEC links that prove the names answered
// by wildcards do not exist themselves.
func (s *Server) signAnswer(scr *scratch, snap *Snapshot, m map[string]*dnssec.Signer, now time.Time, ok *bool) (signed bool, wild []chainLink) {
	resp := &scr.resp
	out := scr.sig[:0]
	for i := 0; i < len(resp.Answer); {
		j := rrsetEnd(resp.Answer, i)
		out = append(out, resp.Answer[i:j]...)
		h := resp.Answer[i].Header()
		if sg, z := signerFor(snap, m, h.Name, h.Rrtype); sg != nil {
			opt := dnssec.SignOptions{Packed: true}
			if w := z.chainWildcard(h.Name); w != "" {
				// Signed once as the wildcard's, with the chain's proof that the name itself
				// does not exist (RFC 4035 §3.1.3.3).
				opt.Wildcard = w
				wild = append(wild, chainLink{z: z, i: z.chain.cover(h.Name)})
			}
			out = s.appendSigsWith(out, sg, resp.Answer[i:j], now, opt, ok)
			signed = true
		}
		i = j
	}
	scr.sig, resp.Answer = resp.Answer[:0], out
	return signed, wild
}

// signAuthority returns the authority section's record sets with the signatures of those
// that signed zones own, and for a referral the DS of the cut or the proof that it has none;
// signed says whether it added any.
func (s *Server) signAuthority(authority []dns.RR, snap *Snapshot, m map[string]*dnssec.Signer, now time.Time, ok *bool) (ns []dns.RR, signed bool) {
	for i := 0; i < len(authority); {
		j := rrsetEnd(authority, i)
		set := authority[i:j]
		ns = append(ns, set...)
		h := set[0].Header()
		z := snap.zoneOf(h.Name)
		if h.Rrtype == dns.TypeNS {
			// A referral is the parent's, even to a child hosted here too.
			z = snap.parentSide(h.Name)
		}
		sg := m[zoneName(z)]
		switch {
		case sg == nil:
		case h.Rrtype == dns.TypeNS && h.Name != z.name:
			// A referral: the DS of the cut, or the proof that it has none.
			ns = s.appendCutProof(ns, sg, z, h.Name, now, ok)
			signed = true
		case h.Rrtype != dns.TypeNS:
			ns = s.appendSigs(ns, sg, set, now, ok)
			signed = true
		}
		i = j
	}
	return ns, signed
}

// signDenial appends to ns the NSEC proof of the answer's denial d, when a signed zone
// denies: a link of the zone's chain, or a black lie made for the name, which turns the
// rcode of a name that does not exist into NOERROR. signed says whether it added one.
func (s *Server) signDenial(ns []dns.RR, d denial, m map[string]*dnssec.Signer, proved *[]chainLink, rcode int, now time.Time, ok *bool) (_ []dns.RR, _ int, signed bool) {
	if d.z == nil {
		return ns, rcode, false
	}
	sg := m[d.z.name]
	if sg == nil {
		return ns, rcode, false
	}
	if d.z.chain != nil {
		return s.appendChainDenial(ns, sg, d, proved, now, ok), rcode, true
	}
	var nsec *dns.NSEC
	if d.node == nil {
		nsec = dnssec.NoName(d.name, d.z.negTTL)
		rcode = dns.RcodeSuccess
	} else {
		// The name's types but the one denied: a record set that answers nothing now
		// (nothing healthy, an alias whose target has no such set) is absent.
		nsec = dnssec.NoData(d.name, typesBut(typesAt(d.z, d.name, d.node), d.rtype), d.z.negTTL)
	}
	ns = append(ns, nsec)
	// A black lie is for one name, which a flood of random names never asks again:
	// its signature skips the cache (it would push out what is asked again).
	return s.appendSigsOnce(ns, sg, []dns.RR{nsec}, now, d.node == nil, ok), rcode, true
}

// appendChainDenial appends the proof of denial d from its zone's NSEC chain (RFC 4035
// §3.1.3): for a name that does not exist (NXDOMAIN), the NSEC that covers it and the one
// that covers the wildcard at its closest encloser; for an empty non-terminal, the NSEC that
// covers it; for a name of the chain without the type, its NSEC without the type. Their
// signatures come from the cache after the first. A name synthesized from a wildcard that
// lacks the type gets the NSEC that covers it and the wildcard's NSEC without the type.
func (s *Server) appendChainDenial(dst []dns.RR, sg *dnssec.Signer, d denial, proved *[]chainLink, now time.Time, ok *bool) []dns.RR {
	z, c := d.z, d.z.chain
	link := func(i int) []dns.RR {
		return s.appendLink(dst, sg, chainLink{z: z, i: i}, proved, now, ok)
	}
	switch {
	case d.node == nil:
		i := c.cover(d.name)
		dst = link(i)
		if w := c.cover("*." + z.closestEncloser(d.name)); w != i {
			dst = link(w)
		}
		return dst
	case len(d.node.sets) == 0:
		return link(c.cover(d.name))
	}
	if i, in := c.has(d.name); in {
		if !slices.Contains(c.link(i).TypeBitMap, d.rtype) {
			return link(i)
		}
		// The type's set answers nothing now (nothing healthy, an alias without target):
		// the name's NSEC without it, signed once for each such state and then cached.
		nsec := dnssec.Link(d.name, c.link(i).NextDomain, typesBut(typesAt(z, d.name, d.node), d.rtype), z.negTTL)
		dst = append(dst, nsec)
		return s.appendSigs(dst, sg, []dns.RR{nsec}, now, ok)
	}
	if w := "*." + z.closestEncloser(d.name); z.names[w] == d.node {
		if i, in := c.has(w); in && !slices.Contains(c.link(i).TypeBitMap, d.rtype) {
			// A wildcard without the type (RFC 4035 §3.1.3.4): the NSEC that covers the
			// name and the wildcard's own, both from the cache. (A wildcard whose set of the
			// type answers nothing now gets the NSEC made for the name below.)
			dst = link(c.cover(d.name))
			return link(i)
		}
	}
	nsec := dnssec.NoData(d.name, typesBut(typesAt(z, d.name, d.node), d.rtype), z.negTTL)
	dst = append(dst, nsec)
	return s.appendSigsOnce(dst, sg, []dns.RR{nsec}, now, true, ok)
}

// chainLink names link i of zone z's NSEC chain.
type chainLink struct {
	z *zone
	i int
}

// appendLink appends link l of its zone's NSEC chain with its signatures, unless proved
// holds it already (a response proves with each link once); it adds l to proved.
func (s *Server) appendLink(dst []dns.RR, sg *dnssec.Signer, l chainLink, proved *[]chainLink, now time.Time, ok *bool) []dns.RR {
	if sg == nil || slices.Contains(*proved, l) {
		return dst
	}
	*proved = append(*proved, l)
	dst = append(dst, l.z.chain.link(l.i))
	return s.appendSigs(dst, sg, dst[len(dst)-1:], now, ok)
}

// chainWildcard returns the wildcard ("*.<closest encloser>") that name, in the answer, was
// expanded from, when zone z (the zone that holds name's record sets, or nil) proves denials
// from its NSEC chain; else "". With compact denial an expanded name is signed as its own:
// the proof that it does not exist would cost a new signature anyway.
func (z *zone) chainWildcard(name string) string {
	if z == nil || z.chain == nil || !z.wild || z.names[name] != nil {
		return ""
	}
	if n, wild := z.lookup(name); n != nil && wild {
		return "*." + z.closestEncloser(name)
	}
	return ""
}

// appendCutProof appends the DS record set of the delegation at cut with its signatures, or
// the NSEC record that proves the cut has none (an insecure delegation).
func (s *Server) appendCutProof(dst []dns.RR, sg *dnssec.Signer, z *zone, cut string, now time.Time, ok *bool) []dns.RR {
	n := z.names[cut]
	if n == nil {
		return dst
	}
	if ds := n.find(dns.TypeDS); ds != nil {
		dst = append(dst, ds.rrs...)
		return s.appendSigs(dst, sg, ds.rrs, now, ok)
	}
	var nsec dns.RR
	if i, in := z.chain.has(cut); in {
		nsec = z.chain.link(i)
	} else {
		nsec = dnssec.NoData(cut, typesAt(z, cut, n), z.negTTL)
	}
	dst = append(dst, nsec)
	return s.appendSigs(dst, sg, []dns.RR{nsec}, now, ok)
}

// appendSigs appends the signatures of rrset. A spent signing budget clears *ok; any other
// failure to sign is logged and leaves the set unsigned, which a validator treats as bogus
// rather than as absent.
func (s *Server) appendSigs(dst []dns.RR, sg *dnssec.Signer, rrset []dns.RR, now time.Time, ok *bool) []dns.RR {
	return s.appendSigsOnce(dst, sg, rrset, now, false, ok)
}

// appendSigsOnce is appendSigs, with the signature neither looked up in nor kept in the
// signature cache when once is set (dnssec.Signer.AppendSignaturesOnce). The signatures are
// appended in packed form (dnssec.SignOptions.Packed): the response is packed next.
func (s *Server) appendSigsOnce(dst []dns.RR, sg *dnssec.Signer, rrset []dns.RR, now time.Time, once bool, ok *bool) []dns.RR {
	return s.appendSigsWith(dst, sg, rrset, now, dnssec.SignOptions{Once: once, Packed: true}, ok)
}

// appendSigsWith is appendSigs with the options opt.
func (s *Server) appendSigsWith(dst []dns.RR, sg *dnssec.Signer, rrset []dns.RR, now time.Time, opt dnssec.SignOptions, ok *bool) []dns.RR {
	out, err := sg.AppendSignaturesWith(dst, rrset, now, s.budget, opt)
	switch {
	case errors.Is(err, dnssec.ErrSignBudget):
		*ok = false
	case err != nil:
		s.log.Error("location: cannot sign a record set", "zone", sg.Zone(), "err", err)
		s.metrics.signFailures.Inc()
	}
	return out
}

// typesAt returns the types of the record sets at node n of zone z, name, as its NSEC lists
// them (nodeTypes).
func typesAt(z *zone, name string, n *node) []uint16 {
	return nodeTypes(z.name, name, n)
}

// nodeTypes returns the types an NSEC record at name, node n of the zone of apex, lists: the
// types of its record sets, with DNSKEY at the apex; at a delegation only NS and DS, the sets
// the zone is authoritative for there (RFC 4035 §2.3), not the address glue beside them.
func nodeTypes(apex, name string, n *node) []uint16 {
	cut := name != apex && n.cut() != nil
	types := make([]uint16, 0, len(n.sets)+1)
	for _, rs := range n.sets {
		if cut && rs.rtype != dns.TypeNS && rs.rtype != dns.TypeDS {
			continue
		}
		types = append(types, rs.rtype)
	}
	if name == apex {
		types = append(types, dns.TypeDNSKEY)
	}
	return types
}

// typesBut returns types without t.
func typesBut(types []uint16, t uint16) []uint16 {
	return slices.DeleteFunc(types, func(u uint16) bool { return u == t })
}

// signerFor returns the signer of the zone that owns the record set of type rtype at name,
// or nil: the nearest zone, except that a DS set at the apex of a hosted zone is its
// parent's data (RFC 4035 §2.4), signed by the parent. It returns that zone too, but for DS.
func signerFor(snap *Snapshot, m map[string]*dnssec.Signer, name string, rtype uint16) (*dnssec.Signer, *zone) {
	if rtype == dns.TypeDS {
		return m[zoneName(snap.parentSide(name))], nil
	}
	z := snap.zoneOf(name)
	return m[zoneName(z)], z
}

// parentSide returns the zone that holds the delegation at name: the zone above name when
// name is the apex of a hosted zone and that zone's parent is hosted too, else the nearest
// zone of name.
func (snap *Snapshot) parentSide(name string) *zone {
	z := snap.zoneOf(name)
	if z == nil || z.name != name {
		return z
	}
	if off, end := dns.NextLabel(name, 0); !end {
		if p := snap.zoneOf(name[off:]); p != nil {
			return p
		}
	}
	return z
}

// zoneName returns the apex of z, or "" for nil.
func zoneName(z *zone) string {
	if z == nil {
		return ""
	}
	return z.name
}

// rrsetEnd returns the end of the record set that starts at rrs[i]: the records that follow
// with its owner, type and class.
func rrsetEnd(rrs []dns.RR, i int) int {
	h := rrs[i].Header()
	j := i + 1
	for j < len(rrs) {
		g := rrs[j].Header()
		if g.Rrtype != h.Rrtype || g.Class != h.Class || g.Name != h.Name {
			break
		}
		j++
	}
	return j
}
