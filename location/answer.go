package location

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

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
	// ede and notAuth hold the extended DNS error of a REFUSED response, without allocating.
	ede     [1]dns.EDNS0
	notAuth dns.EDNS0_EDE
	// denial is where the answer denies a name or type, for its NSEC proof (dnssec.go);
	// sig holds the answer section while it is signed.
	denial denial
	sig    []dns.RR
	// key, lower and fill are the fast path's: the key of the query's answer in the answer
	// cache, the query with its question name in lower case, and what the full path notes
	// about the answer's caching (fastpath.go).
	key   [maxCacheKey]byte
	lower []byte
	fill  fillState
}

// newScratch returns buffers for one worker.
func newScratch() *scratch {
	return &scratch{out: make([]byte, 0, dns.MaxMsgSize), idx: make([]int, 0, 16),
		answer: make([]dns.RR, 0, 16), ns: make([]dns.RR, 0, 8), extra: make([]dns.RR, 0, 8),
		notAuth: dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeNotAuthoritative}}
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
	scr.denial = denial{}
	oc.answer = true
	if err := q.Unpack(query); err != nil {
		// Answer FORMERR from the header alone: its ID, opcode and flags are all that can be
		// trusted.
		headerOnly(resp, query)
		return s.finish(scr, req, dns.RcodeFormatError, 0, &oc)
	}
	if len(q.Extra) > 0 && q.IsTsig() != nil {
		// Signed with TSIG (a secondary asking for the SOA): verified, answered, signed (xfr_tsig.go).
		return s.respondTSIG(scr, query, req, &oc)
	}
	resp.Id, resp.Opcode = q.Id, q.Opcode
	// RD is copied into every response (RFC 1035 §4.1.1), CD too (RFC 4035 §3.1.6).
	resp.RecursionDesired, resp.CheckingDisabled = q.RecursionDesired, q.CheckingDisabled
	if problem := sectionsProblem(query, q); problem != "" {
		// Sections that do not parse as their counts say: nothing in them can be trusted.
		return s.finish(scr, req, dns.RcodeFormatError, 0, &oc)
	}
	if len(q.Question) > 0 {
		resp.Question = q.Question[:1]
		oc.qtype = q.Question[0].Qtype
	}

	opt, ok := requestOPT(q)
	if !ok {
		return s.finish(scr, req, dns.RcodeFormatError, 0, &oc)
	}
	limit := s.payloadLimit(opt, req.TCP)
	if opt != nil {
		s.echoOPT(scr, opt)
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
	case len(q.Answer) > 0 || len(q.Ns) > 0 && qn.Qtype != dns.TypeIXFR:
		// A question carries no answer, nor authority but IXFR's SOA (RFC 1995 §3).
		return s.finish(scr, req, dns.RcodeFormatError, limit, &oc)
	case qn.Qclass != dns.ClassINET && qn.Qclass != dns.ClassANY:
		return s.refuse(scr, req, limit, &oc)
	}
	return s.answerQuestion(scr, req, qn, limit, opt != nil && opt.Do(), &oc)
}

// headerOnly sets the ID, opcode and flags of resp from the header of a query that does not
// parse: all of it that can be trusted.
func headerOnly(resp *dns.Msg, query []byte) {
	resp.Id = binary.BigEndian.Uint16(query[0:2])
	resp.Opcode = int(query[2]>>3) & 0xF
	resp.RecursionDesired, resp.CheckingDisabled = query[2]&1 != 0, query[3]&0x10 != 0
}

// echoOPT adds the response's OPT record to a query with one (opt): this server's UDP size,
// and the DO bit when the query set it.
func (s *Server) echoOPT(scr *scratch, opt *dns.OPT) {
	scr.opt = dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	scr.opt.SetUDPSize(uint16(s.udpSize))
	if opt.Do() {
		scr.opt.SetDo()
	}
	scr.resp.Extra = append(scr.resp.Extra, &scr.opt)
}

// answerQuestion answers a well-formed query of the one question qn from the zone that holds
// it, at most limit bytes long, with DNSSEC records when do is set: REFUSED outside the zones
// served here and for zone transfers, nothing or a truncated answer past the response rate
// limit.
func (s *Server) answerQuestion(scr *scratch, req Request, qn dns.Question, limit int, do bool, oc *outcome) ([]byte, outcome) {
	resp := &scr.resp
	snap := s.snap.Load()
	name := strings.ToLower(qn.Name)
	z := snap.zoneFor(name, qn.Qtype, req.NameServer)
	if z == nil {
		return s.refuse(scr, req, limit, oc)
	}
	oc.zone = z
	if !z.servedOn(req.NameServer) {
		// A virtual name server outside the zone's shard: not this zone's server here.
		return s.refuse(scr, req, limit, oc)
	}
	if scr.fill.on {
		// Read before any verdict: a change after this makes the answer stale (cache.go).
		scr.fill.zone, scr.fill.zgen = z, z.gen.Load()
	}
	switch qn.Qtype {
	case dns.TypeAXFR, dns.TypeIXFR:
		// Zone transfers are served over TCP only, where serveConn hands them to
		// serveTransfer (xfr_serve.go): one here came over UDP, or through Respond.
		return s.finish(scr, req, dns.RcodeRefused, limit, oc)
	}
	if !req.TCP && s.rrl != nil {
		d := scr.fill.rrl
		if !scr.fill.rrlPreset {
			d = s.rrl.allow(req.From, s.now())
		}
		switch d {
		case rrlDrop:
			oc.drop, oc.answer = dropRRL, false
			return nil, *oc
		case rrlSlip:
			oc.slip = true
			resp.Authoritative, resp.Truncated = true, true
			return s.finish(scr, req, dns.RcodeSuccess, limit, oc)
		}
	}
	resp.Authoritative = true
	rcode, ok := s.answerZone(scr, snap, z, name, qn.Qtype, req.NameServer, do)
	if !ok {
		return s.dropUnsigned(scr, oc)
	}
	if qn.Qclass == dns.ClassANY {
		// The IN data answers class ANY, but not authoritatively: other classes may hold more
		// (RFC 1034 §4.3.2).
		resp.Authoritative = false
	}
	return s.finish(scr, req, rcode, limit, oc)
}

// refuse answers REFUSED to a question this listener is not authoritative for, saying so with
// the extended DNS error Not Authoritative (RFC 8914 §4.21) when the query speaks EDNS0.
func (s *Server) refuse(scr *scratch, req Request, limit int, oc *outcome) ([]byte, outcome) {
	if len(scr.resp.Extra) > 0 {
		scr.opt.Option = append(scr.ede[:0], &scr.notAuth)
	}
	return s.finish(scr, req, dns.RcodeRefused, limit, oc)
}
