package location

import (
	"errors"
	"strings"

	"github.com/miekg/dns"
)

// respondTSIG answers a query signed with TSIG: a secondary asks for the SOA of a zone it
// transfers with its key. A key this location holds and a signature that verifies get the
// answer any query gets, signed with the same key; any other gets NOTAUTH with the TSIG
// error (BADKEY, BADSIG, BADTIME), unsigned (RFC 8945 §5.3.2). It is not the hot path: it
// allocates.
func (s *Server) respondTSIG(scr *scratch, query []byte, req Request, oc *outcome) ([]byte, outcome) {
	q := scr.req.Copy()
	t := q.IsTsig()
	st := s.xfr.settings.Load()
	key, ok := st.keys[strings.ToLower(t.Hdr.Name)]
	var tsigErr uint16
	switch {
	case !ok || !strings.EqualFold(key.Algorithm, t.Algorithm):
		tsigErr = dns.RcodeBadKey
	default:
		if err := dns.TsigVerify(query, key.Secret, "", false); err != nil {
			tsigErr = dns.RcodeBadSig
			if errors.Is(err, dns.ErrTime) {
				tsigErr = dns.RcodeBadTime
			}
		}
	}
	if tsigErr != 0 {
		s.xfr.m.refused.WithLabelValues(refuseBadKey).Inc()
		resp := new(dns.Msg)
		resp.SetRcode(q, dns.RcodeNotAuth)
		resp.Extra = []dns.RR{&dns.TSIG{Hdr: dns.RR_Header{Name: t.Hdr.Name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
			Algorithm: t.Algorithm, TimeSigned: t.TimeSigned, Fudge: t.Fudge, OrigId: q.Id, Error: tsigErr}}
		out, err := resp.Pack()
		if err != nil {
			oc.drop, oc.answer = dropMalformed, false
			return nil, *oc
		}
		oc.rcode = dns.RcodeNotAuth
		scr.out = append(scr.out[:0], out...)
		return scr.out, *oc
	}
	q.Extra = q.Extra[:len(q.Extra)-1]
	plain, err := q.Pack()
	if err != nil {
		oc.drop, oc.answer = dropMalformed, false
		return nil, *oc
	}
	out, inner := s.respond(scr, plain, req)
	if out == nil {
		return nil, inner
	}
	r := new(dns.Msg)
	if err := r.Unpack(out); err != nil {
		return nil, inner
	}
	signed, _, err := signTSIG(r, &key, t.MAC, false)
	if err != nil {
		s.log.Warn("location: cannot sign an answer with TSIG", "key", key.Name, "err", err)
		return nil, inner
	}
	scr.out = append(scr.out[:0], signed...)
	return scr.out, inner
}
