package location

import (
	"encoding/binary"
	"strings"

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

// finish sets rcode, packs the response into scr.out and fits it to limit. A FORMERR response
// holds no question. A response that does not fit first loses optional additional data, the
// record sets of addresses of the names its records point at, from the last until it fits (RFC
// 2181 §9: leave them out rather than truncate); one that still does not fit
// keeps its question and OPT record, loses every other record and has TC set, so that the
// resolver asks again over TCP. A limit of 0 means the smallest, 512 bytes.
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
	if rcode == dns.RcodeFormatError {
		// Nothing of a malformed query is echoed: which question it meant is not known.
		resp.Question = nil
	}
	defer scr.keep()
	// PackBuffer packs into its buffer's length, not its capacity: given scr.out at length
	// 0 it would allocate a new buffer for every response.
	out, err := resp.PackBuffer(scr.out[:cap(scr.out)])
	if err == nil && len(out) <= limit {
		return out, *oc
	}
	scr.fill.trimmed = true
	if err == nil && keepOPT(resp.Extra) < len(resp.Extra) {
		trimAdditional(resp, limit)
		if out, err = resp.PackBuffer(scr.out[:cap(scr.out)]); err == nil && len(out) <= limit {
			return out, *oc
		}
	}
	if err != nil {
		s.log.Warn("location: cannot pack a response", "err", err, "question", resp.Question)
		resp.Rcode, oc.rcode = dns.RcodeServerFailure, dns.RcodeServerFailure
	} else {
		resp.Truncated = true
	}
	resp.Answer, resp.Ns = resp.Answer[:0], resp.Ns[:0]
	resp.Extra = resp.Extra[:keepOPT(resp.Extra)]
	out, err = resp.PackBuffer(scr.out[:cap(scr.out)])
	if err != nil || len(out) > limit {
		// Nothing left to cut: a question that cannot be echoed gets no response.
		oc.drop, oc.answer = dropMalformed, false
		return nil, *oc
	}
	return out, *oc
}

// trimAdditional leaves out the additional record sets of resp, from the last, until resp fits
// in limit bytes or only its OPT record is left there (keepOPT has put it first).
func trimAdditional(resp *dns.Msg, limit int) {
	n := keepOPT(resp.Extra)
	for len(resp.Extra) > n && resp.Len() > limit {
		last := resp.Extra[len(resp.Extra)-1].Header()
		end := len(resp.Extra) - 1
		for end > n {
			h := resp.Extra[end-1].Header()
			if h.Rrtype != last.Rrtype || !strings.EqualFold(h.Name, last.Name) {
				break
			}
			end--
		}
		resp.Extra = resp.Extra[:end]
	}
}

// keepOPT moves the OPT records of extra to its front and returns how many there are.
func keepOPT(extra []dns.RR) int {
	n := 0
	for i, rr := range extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			extra[n], extra[i] = extra[i], extra[n]
			n++
		}
	}
	return n
}

// keep holds on to the sections' storage, grown or not, for the next query.
func (scr *scratch) keep() {
	scr.answer, scr.ns, scr.extra = scr.resp.Answer[:0], scr.resp.Ns[:0], scr.resp.Extra[:0]
}

// sectionsProblem says why a query's sections do not hold what its header counts, or returns
// "": a question cut short of its type and class, or fewer records than a section counts.
// miekg/dns reads both without an error; RFC 1035 §4.1 makes them a format error.
func sectionsProblem(query []byte, q *dns.Msg) string {
	count := func(i int) int { return int(binary.BigEndian.Uint16(query[i:])) }
	off := 12
	for range count(4) {
		next, ok := skipName(query, off)
		if !ok {
			return "a question name does not parse"
		}
		if next+4 > len(query) {
			return "a question without its type and class"
		}
		off = next + 4
	}
	if len(q.Answer) != count(6) || len(q.Ns) != count(8) || len(q.Extra) != count(10) {
		return "a section holds fewer records than the header counts"
	}
	return ""
}

// skipName returns the offset after the domain name at msg[off:], without reading it into a
// string: labels up to the root label, or up to a compression pointer (its target is read by
// the unpacking that came before). ok is false when the name runs past msg.
func skipName(msg []byte, off int) (next int, ok bool) {
	for off < len(msg) {
		switch l := int(msg[off]); {
		case l == 0:
			return off + 1, true
		case l&0xC0 == 0xC0:
			return off + 2, off+2 <= len(msg)
		case l&0xC0 != 0:
			return 0, false
		default:
			off += 1 + l
		}
	}
	return 0, false
}
