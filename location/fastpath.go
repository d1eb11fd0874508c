package location

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/miekg/dns"
)

// fastQuery is what the fast path reads of a query: enough to key its answer and patch it.
type fastQuery struct {
	nameEnd int  // the offset just after the question name
	keyLen  int  // the key's length in scr.key
	limit   int  // the payload limit, as payloadLimit computes it
	upper   bool // the question name has upper-case letters
}

// The key's layout in scr.key: the listener (4 bytes), the type (2), the EDNS flags (1), the
// payload class (2), then the question name in wire form, lower case.
const (
	keyClass = 7
	keyName  = 9
)

// The EDNS flags of the key.
const (
	keyEDNS = 1 << 0
	keyDO   = 1 << 1
)

// fillState is what the full path notes, while it answers a question the fast path read,
// about whether and how its answer may be cached.
type fillState struct {
	on        bool   // the fast path read the query: its answer may be cached
	epoch     uint64 // the cache's epoch, read before the answer read any state
	zone      *zone  // the zone the answer starts in
	zgen      uint64 // its epoch, read before the answer read any verdict
	noCache   bool   // the answer must not be cached (why: see cache.go)
	trimmed   bool   // the answer was trimmed or truncated to the payload limit
	signed    bool   // the answer holds signatures: it expires (signedCacheFor)
	known     bool   // the cache held an answer to the question, gone stale: cache it again
	rrlPreset bool   // rrl holds the rate limiter's decision, made by the fast path
	rrl       rrlDecision
	// lastResorts holds the labels of the record sets answered in last resort.
	lastResorts []string
}

// noCache marks the answer being made as not to be cached.
func (scr *scratch) noCache() { scr.fill.noCache = true }

// lastResort counts an answer of rs in last resort, and notes it for the answer's cache
// entry, which counts it again whenever it is served.
func (scr *scratch) lastResort(m *metrics, rs *rrset) {
	label := rs.label()
	m.lastResort(label)
	if scr.fill.on {
		scr.fill.lastResorts = append(scr.fill.lastResorts, label)
	}
}

// inZone marks the answer as not to be cached when it reads zone z and started in another.
func (scr *scratch) inZone(z *zone) {
	if z != scr.fill.zone {
		scr.fill.noCache = true
	}
}

// readQuery reads query as the fast path takes it: one IN question of opcode QUERY, a name
// without compression, at most an OPT record of EDNS version 0 with no option but NSID,
// cookies and padding, and nothing after. It writes the key of its answer (payload class 0)
// in scr.key. ok is false for any other query, which the full path answers.
func (scr *scratch) readQuery(query []byte, ns, udpSize int) (fq fastQuery, ok bool) {
	if len(query) < 17 || query[2]&0xF8 != 0 { // QR, opcode
		return fq, false
	}
	u16 := func(i int) int { return int(binary.BigEndian.Uint16(query[i:])) }
	ar := u16(10)
	if u16(4) != 1 || u16(6) != 0 || u16(8) != 0 || ar > 1 {
		return fq, false
	}
	key := scr.key[:]
	k, off := keyName, 12
	for {
		if off >= len(query) {
			return fq, false
		}
		l := int(query[off])
		if l == 0 {
			key[k] = 0
			k, off = k+1, off+1
			break
		}
		if l > 63 || off+1+l > len(query) || k+1+l+1 > maxCacheKey {
			return fq, false
		}
		key[k] = byte(l)
		for i, c := range query[off+1 : off+1+l] {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
				fq.upper = true
			}
			key[k+1+i] = c
		}
		k, off = k+1+l, off+1+l
	}
	fq.nameEnd, fq.keyLen = off, k
	if off+4 > len(query) || u16(off+2) != int(dns.ClassINET) {
		return fq, false
	}
	switch qtype := uint16(u16(off)); qtype {
	case dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeAXFR, dns.TypeIXFR:
		return fq, false
	}
	copy(key[4:6], query[off:off+2])
	off += 4
	flags := byte(0)
	fq.limit = dns.MinMsgSize
	if ar == 1 {
		if off, flags, fq.limit, ok = readOPT(query, off, udpSize); !ok {
			return fq, false
		}
	}
	if off != len(query) {
		return fq, false
	}
	binary.BigEndian.PutUint32(key[0:4], uint32(int32(ns)))
	key[6] = flags
	key[keyClass], key[keyClass+1] = 0, 0
	return fq, true
}

// readOPT reads the OPT record at off in query as the fast path takes it: root owner, type,
// payload size, extended rcode, version 0, flags, and no option but NSID, cookies and
// padding. It returns where the record ends, the key's flags (EDNS, DO) and the payload
// limit of the answer (the query's, within dns.MinMsgSize and udpSize); ok is false for any
// other record.
func readOPT(query []byte, off, udpSize int) (end int, flags byte, limit int, ok bool) {
	u16 := func(i int) int { return int(binary.BigEndian.Uint16(query[i:])) }
	if off+11 > len(query) || query[off] != 0 || u16(off+1) != int(dns.TypeOPT) || query[off+6] != 0 {
		return 0, 0, 0, false
	}
	flags = keyEDNS
	if query[off+7]&0x80 != 0 {
		flags |= keyDO
	}
	limit = max(dns.MinMsgSize, min(u16(off+3), udpSize))
	end = off + 11 + u16(off+9)
	if end > len(query) {
		return 0, 0, 0, false
	}
	for p := off + 11; p < end; {
		if p+4 > end || p+4+u16(p+2) > end {
			return 0, 0, 0, false
		}
		switch uint16(u16(p)) {
		case dns.EDNS0NSID, dns.EDNS0COOKIE, dns.EDNS0PADDING:
		default:
			return 0, 0, 0, false
		}
		p += 4 + u16(p+2)
	}
	return end, flags, limit, true
}

// setClass sets the payload class of the key in scr.key and returns the key and its hash.
func (scr *scratch) setClass(c *answerCache, fq fastQuery, class int) ([]byte, uint64) {
	binary.BigEndian.PutUint16(scr.key[keyClass:], uint16(class))
	key := scr.key[:fq.keyLen]
	return key, maphash.Bytes(c.seed, key)
}

// answer answers one query: from the answer cache when it holds the answer, else by the
// full path (respond), whose answer it then caches when it may. A query the fast path cannot
// read takes the full path as it is; one it can is answered as its question in lower case,
// the question then written back as the query spelled it, over UDP and TCP alike, so that
// the names of every response are in the case of the question (compressed against it). Only
// UDP answers are cached.
func (s *Server) answer(scr *scratch, query []byte, req Request) ([]byte, outcome) {
	fq, ok := scr.readQuery(query, req.NameServer, s.udpSize)
	if !ok {
		return s.respond(scr, query, req)
	}
	c := s.cache
	if c == nil || req.TCP {
		return s.fill(scr, nil, query, req, fq)
	}
	key, h := scr.setClass(c, fq, 0)
	e, known := c.lookup(key, h, s.nowNano)
	if e == nil || len(e.wire) > fq.limit {
		// Not cached whole, or too long for this query: the answer made to its limit.
		key, h = scr.setClass(c, fq, fq.limit)
		var knownHere bool
		e, knownHere = c.lookup(key, h, s.nowNano)
		known = known || knownHere
	}
	if e == nil {
		scr.fill.known = known
		return s.fill(scr, c, query, req, fq)
	}
	if s.rrl != nil {
		if d := s.rrl.allow(req.From, s.now()); d != rrlAllow {
			// Limited: the full path drops or slips, with this decision.
			scr.fill = fillState{rrlPreset: true, rrl: d, lastResorts: scr.fill.lastResorts[:0]}
			out, oc := s.respond(scr, query, req)
			scr.fill = fillState{lastResorts: scr.fill.lastResorts[:0]}
			return out, oc
		}
	}
	return s.serveCached(scr, e, query, fq), e.outcome()
}

// fill answers query by the full path, its question name read in lower case, and writes the
// name back as the query spelled it; with a cache c, it caches the answer when it may.
func (s *Server) fill(scr *scratch, c *answerCache, query []byte, req Request, fq fastQuery) ([]byte, outcome) {
	known := scr.fill.known
	q := query
	if fq.upper {
		scr.lower = append(scr.lower[:0], query...)
		copy(scr.lower[12:fq.nameEnd], scr.key[keyName:fq.keyLen])
		q = scr.lower
	}
	scr.fill = fillState{lastResorts: scr.fill.lastResorts[:0]}
	if c != nil {
		scr.fill.on, scr.fill.epoch = true, c.epoch.Load()
	}
	out, oc := s.respond(scr, q, req)
	f := &scr.fill
	if c != nil && out != nil && oc.drop == "" && !oc.slip && oc.rcode != dns.RcodeServerFailure && !f.noCache && f.zone != nil && len(out) >= fq.nameEnd {
		class := 0
		if f.trimmed {
			class = fq.limit
		}
		key, h := scr.setClass(c, fq, class)
		if known || c.admit(h) {
			e := &cachedAnswer{hash: h, key: append([]byte(nil), key...), epoch: f.epoch, zone: f.zone,
				zgen: f.zgen, wire: append([]byte(nil), out...), qtype: oc.qtype, rcode: oc.rcode}
			if f.signed {
				e.expires = s.nowNano() + signedCacheFor
			}
			for _, label := range f.lastResorts {
				e.lastResorts = append(e.lastResorts, s.metrics.lastResorts.WithLabelValues(label))
			}
			c.store(e)
		}
	}
	scr.fill = fillState{lastResorts: f.lastResorts[:0]}
	if fq.upper && len(out) >= fq.nameEnd && binary.BigEndian.Uint16(out[4:]) == 1 {
		copy(out[12:fq.nameEnd], query[12:fq.nameEnd])
	}
	return out, oc
}

// serveCached writes e's answer to query in scr.out and returns it: the query's ID, its RD
// and CD bits and its question name as it spelled it.
func (s *Server) serveCached(scr *scratch, e *cachedAnswer, query []byte, fq fastQuery) []byte {
	out := append(scr.out[:0], e.wire...)
	out[0], out[1] = query[0], query[1]
	out[2] = out[2]&^0x01 | query[2]&0x01 // RD
	out[3] = out[3]&^0x10 | query[3]&0x10 // CD
	copy(out[12:fq.nameEnd], query[12:fq.nameEnd])
	for _, c := range e.lastResorts {
		c.Inc()
	}
	return out
}

// outcome is what the metrics count for a cached answer.
func (e *cachedAnswer) outcome() outcome {
	return outcome{qtype: e.qtype, rcode: e.rcode, zone: e.zone, answer: true}
}

// nowNano is the server's clock in Unix nanoseconds.
func (s *Server) nowNano() int64 { return s.now().UnixNano() }
