package location

import (
	"github.com/miekg/dns"
)

// DefaultUDPSize is the largest UDP response sent by default: 1,232 bytes, the size the DNS
// flag day 2020 chose so that a response fits an IPv6 packet without fragmentation.
const DefaultUDPSize = 1232

// requestOPT returns the query's OPT record, or nil when it has none; ok is false when the
// query is malformed: more than one OPT, or one not owned by the root.
func requestOPT(q *dns.Msg) (opt *dns.OPT, ok bool) {
	for _, rr := range q.Extra {
		o, isOPT := rr.(*dns.OPT)
		if !isOPT {
			continue
		}
		if opt != nil || o.Hdr.Name != "." {
			return nil, false
		}
		opt = o
	}
	return opt, true
}

// payloadLimit returns the largest response the query may get: the DNS message limit over
// TCP; over UDP 512 bytes without EDNS0, else the client's size capped at the server's.
func (s *Server) payloadLimit(opt *dns.OPT, tcp bool) int {
	switch {
	case tcp:
		return dns.MaxMsgSize
	case opt == nil:
		return dns.MinMsgSize
	}
	return max(dns.MinMsgSize, min(int(opt.UDPSize()), s.udpSize))
}

// finish sets rcode, packs the response into scr.out and truncates it to limit: a response
// that does not fit keeps its question and OPT record, loses every other record and has TC
// set, so that the resolver asks again over TCP. A limit of 0 means the smallest, 512 bytes.
func (s *Server) finish(scr *scratch, req Request, rcode, limit int, oc *outcome) ([]byte, outcome) {
	resp := &scr.resp
	if limit == 0 {
		limit = dns.MinMsgSize
		if req.TCP {
			limit = dns.MaxMsgSize
		}
	}
	resp.Rcode = rcode
	oc.rcode = rcode
	defer scr.keep()
	out, err := resp.PackBuffer(scr.out)
	if err == nil && len(out) <= limit {
		return out, *oc
	}
	if err != nil {
		s.log.Warn("location: cannot pack a response", "err", err, "question", resp.Question)
		resp.Rcode, oc.rcode = dns.RcodeServerFailure, dns.RcodeServerFailure
	} else {
		resp.Truncated = true
	}
	resp.Answer, resp.Ns = resp.Answer[:0], resp.Ns[:0]
	extra := resp.Extra[:0]
	for _, rr := range resp.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			extra = append(extra, rr)
		}
	}
	resp.Extra = extra
	out, err = resp.PackBuffer(scr.out)
	if err != nil || len(out) > limit {
		// Nothing left to cut: a question that cannot be echoed gets no response.
		oc.drop, oc.answer = dropMalformed, false
		return nil, *oc
	}
	return out, *oc
}

// keep holds on to the sections' storage, grown or not, for the next query.
func (scr *scratch) keep() {
	scr.answer, scr.ns, scr.extra = scr.resp.Answer[:0], scr.resp.Ns[:0], scr.resp.Extra[:0]
}
