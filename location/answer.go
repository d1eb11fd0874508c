package location

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/routing"
)

// maxChain bounds the in-zone CNAME chain a response follows.
const maxChain = 8

// Request says where a query came from: what rate limiting, truncation and the virtual name
// servers need to know beyond its bytes.
type Request struct {
	// From is the client's address.
	From netip.Addr
	// TCP says the query came over TCP: no payload limit but the 64 KiB of a DNS message, and
	// no response rate limiting.
	TCP bool
	// NameServer is the virtual name server the query reached, or -1 for the main listener,
	// which answers every hosted zone.
	NameServer int
}

// outcome is what a response did, for the metrics.
type outcome struct {
	qtype  uint16
	rcode  int
	zone   *zone  // the hosted zone, or nil outside every hosted zone
	drop   string // the reason the query got no response; empty when it got one
	slip   bool   // response rate limiting answered with an empty truncated response
	answer bool   // the query was parsed and answered (even with an error rcode)
}

// scratch holds what one worker reuses from query to query.
type scratch struct {
	req, resp dns.Msg
	opt       dns.OPT
	idx       []int
	out       []byte
	answer    []dns.RR
	ns        []dns.RR
	extra     []dns.RR
	visited   [maxChain + 1]string
}

// newScratch returns buffers for one worker.
func newScratch() *scratch {
	return &scratch{out: make([]byte, 0, dns.MaxMsgSize), idx: make([]int, 0, 16),
		answer: make([]dns.RR, 0, 16), ns: make([]dns.RR, 0, 8), extra: make([]dns.RR, 0, 8)}
}

// respond answers query and returns the response in wire form (in scr.out's storage), or nil
// when the query gets no response.
func (s *Server) respond(scr *scratch, query []byte, req Request) ([]byte, outcome) {
	var oc outcome
	if len(query) < 12 {
		oc.drop = dropMalformed
		return nil, oc
	}
	if binary.BigEndian.Uint16(query[2:4])&(1<<15) != 0 {
		// A response, never answered: that is how reflection loops start.
		oc.drop = dropMalformed
		return nil, oc
	}
	q, resp := &scr.req, &scr.resp
	*resp = dns.Msg{Answer: scr.answer[:0], Ns: scr.ns[:0], Extra: scr.extra[:0]}
	resp.Compress = true
	resp.Response = true
	oc.answer = true
	if err := q.Unpack(query); err != nil {
		// Answer FORMERR from the header alone: its ID and opcode are all that can be trusted.
		resp.Id = binary.BigEndian.Uint16(query[0:2])
		resp.Opcode = int(query[2]>>3) & 0xF
		return s.finish(scr, req, dns.RcodeFormatError, 0, &oc)
	}
	resp.Id, resp.Opcode = q.Id, q.Opcode
	if len(q.Question) > 0 {
		resp.Question = q.Question[:1]
		oc.qtype = q.Question[0].Qtype
	}
	if q.Opcode == dns.OpcodeQuery {
		resp.RecursionDesired, resp.CheckingDisabled = q.RecursionDesired, q.CheckingDisabled
	}

	opt, ok := requestOPT(q)
	if !ok {
		resp.Question = nil
		return s.finish(scr, req, dns.RcodeFormatError, 0, &oc)
	}
	limit := s.payloadLimit(opt, req.TCP)
	if opt != nil {
		scr.opt = dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		scr.opt.SetUDPSize(uint16(s.udpSize))
		if opt.Do() {
			scr.opt.SetDo()
		}
		resp.Extra = append(resp.Extra, &scr.opt)
		if opt.Version() > 0 {
			return s.finish(scr, req, dns.RcodeBadVers, limit, &oc)
		}
	}
	switch {
	case q.Opcode != dns.OpcodeQuery:
		return s.finish(scr, req, dns.RcodeNotImplemented, limit, &oc)
	case len(q.Question) != 1:
		return s.finish(scr, req, dns.RcodeFormatError, limit, &oc)
	}
	qn := q.Question[0]
	switch {
	case qn.Qtype == dns.TypeOPT || qn.Qtype == dns.TypeTSIG || qn.Qtype == dns.TypeTKEY:
		return s.finish(scr, req, dns.RcodeFormatError, limit, &oc)
	case qn.Qclass != dns.ClassINET:
		return s.finish(scr, req, dns.RcodeRefused, limit, &oc)
	}

	snap := s.snap.Load()
	name := strings.ToLower(qn.Name)
	z := snap.zoneOf(name)
	if z == nil {
		return s.finish(scr, req, dns.RcodeRefused, limit, &oc)
	}
	oc.zone = z
	if req.NameServer >= 0 && !z.shard[req.NameServer] {
		// A virtual name server outside the zone's shard: not this zone's server here.
		return s.finish(scr, req, dns.RcodeRefused, limit, &oc)
	}
	switch qn.Qtype {
	case dns.TypeAXFR, dns.TypeIXFR:
		// Zone transfers are not offered: every location builds its zones from the control
		// plane.
		return s.finish(scr, req, dns.RcodeRefused, limit, &oc)
	}
	if !req.TCP && s.rrl != nil {
		switch s.rrl.allow(req.From, s.now()) {
		case rrlDrop:
			oc.drop, oc.answer = dropRRL, false
			return nil, oc
		case rrlSlip:
			oc.slip = true
			resp.Authoritative, resp.Truncated = true, true
			return s.finish(scr, req, dns.RcodeSuccess, limit, &oc)
		}
	}
	resp.Authoritative = true
	rcode := s.resolve(scr, snap, z, name, qn.Qtype)
	return s.finish(scr, req, rcode, limit, &oc)
}

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

// resolve fills the response's sections for name and qtype in zone z and returns the rcode.
func (s *Server) resolve(scr *scratch, snap *Snapshot, z *zone, name string, qtype uint16) int {
	resp := &scr.resp
	v := s.verdicts.Load()
	for hop := 0; ; hop++ {
		scr.visited[hop] = name
		if z.cuts {
			if cut := z.cutAbove(name); cut != nil {
				if hop == 0 {
					// A delegation: not ours to answer, say where to ask.
					resp.Authoritative = false
					resp.Ns = append(resp.Ns, cut.rrs...)
					resp.Extra = z.appendGlue(resp.Extra, cut.rrs)
				}
				return dns.RcodeSuccess
			}
		}
		n := z.names[name]
		if n == nil {
			resp.Ns = append(resp.Ns, z.negSOA())
			return dns.RcodeNameError
		}
		rs := n.find(qtype)
		if qtype == dns.TypeANY && len(n.sets) > 0 {
			// RFC 8482: a minimal answer, one record set of the name.
			rs = n.sets[0]
		}
		if rs != nil {
			if !s.appendAnswer(scr, rs, v) {
				return dns.RcodeServerFailure
			}
			if qtype == dns.TypeNS && name == z.name {
				resp.Extra = z.appendGlue(resp.Extra, nil)
			}
			return dns.RcodeSuccess
		}
		if n.cname == nil || qtype == dns.TypeCNAME {
			// NODATA: the name exists, the type does not.
			resp.Ns = append(resp.Ns, z.negSOA())
			return dns.RcodeSuccess
		}
		before := len(resp.Answer)
		if !s.appendAnswer(scr, n.cname, v) || len(resp.Answer) == before {
			return dns.RcodeServerFailure
		}
		target := resp.Answer[len(resp.Answer)-1].(*dns.CNAME).Target
		if hop+1 >= maxChain || !dns.IsSubDomain(z.name, target) || seen(scr.visited[:hop+1], target) {
			// Out of the zone, too long or a loop: the resolver follows from here.
			return dns.RcodeSuccess
		}
		name = target
	}
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

// appendAnswer appends the records the routing policy chooses from rs to the answer section.
// It reports false when the record set cannot be answered (a policy the selection does not
// know).
func (s *Server) appendAnswer(scr *scratch, rs *rrset, v *verdicts) bool {
	resp := &scr.resp
	if rs.cfg.Policy == "" || rs.cfg.Policy == config.PolicySimple {
		resp.Answer = append(resp.Answer, rs.rrs...)
		return true
	}
	idx, rule, err := routing.Select(&rs.cfg, v.health, rand.Uint64(), scr.idx[:0])
	if err != nil {
		s.log.Error("location: answer selection failed", "record_set", rs.label, "err", err)
		return false
	}
	scr.idx = idx[:0]
	for _, i := range idx {
		resp.Answer = append(resp.Answer, rs.rrs[i])
	}
	if rule.LastResort() {
		s.metrics.lastResort(rs.label)
	}
	return true
}

// cutAbove returns the delegation (NS record set below the apex) at or above name, or nil.
func (z *zone) cutAbove(name string) *rrset {
	for off, end := 0, false; !end; off, end = dns.NextLabel(name, off) {
		n := name[off:]
		if n == z.name {
			return nil
		}
		if node := z.names[n]; node != nil && node.cut != nil {
			return node.cut
		}
	}
	return nil
}

// negSOA returns the SOA record of a negative answer: its TTL is the negative TTL of RFC 2308.
func (z *zone) negSOA() dns.RR { return z.neg }

// appendGlue appends the addresses of the in-zone name servers named by nsRRs (the zone's own
// when nil).
func (z *zone) appendGlue(extra []dns.RR, nsRRs []dns.RR) []dns.RR {
	if nsRRs == nil {
		return append(extra, z.glue...)
	}
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
