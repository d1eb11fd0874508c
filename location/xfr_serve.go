package location

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/internal/netkey"
)

// The reasons a transfer is refused (vigil_location_transfers_refused_total{reason}).
const (
	refuseNotOffer  = "not_offered"   // a zone this location does not transfer
	refuseNetwork   = "network"       // from a network the zone does not allow
	refuseNoKey     = "no_key"        // not signed with TSIG
	refuseBadKey    = "bad_key"       // a key unknown here, or not one of the zone's
	refuseBadSig    = "bad_signature" // the TSIG signature or time does not verify
	refuseBusy      = "busy"          // over the bounds of concurrent transfers
	refuseRate      = "rate"          // a whole-zone transfer over TransferConfig.WholeRate
	refuseMalformed = "malformed"     // a transfer request that does not parse as one
)

// transferChunk bounds the records' uncompressed size in one message of a transfer: well
// under the 64 KiB of a DNS message over TCP, with room for the TSIG record.
const transferChunk = 16 << 10

// isTransferQuery reports whether query (a message's bytes) asks one question of type AXFR or
// IXFR.
func isTransferQuery(query []byte) bool {
	if len(query) < 12 || binary.BigEndian.Uint16(query[4:6]) != 1 || query[2]&0x80 != 0 {
		return false
	}
	off := 12
	for off < len(query) {
		l := int(query[off])
		if l == 0 {
			off++
			break
		}
		if l&0xC0 != 0 {
			return false
		}
		off += 1 + l
	}
	if off+2 > len(query) {
		return false
	}
	t := binary.BigEndian.Uint16(query[off:])
	return t == dns.TypeAXFR || t == dns.TypeIXFR
}

// serveTransfer answers an AXFR or IXFR request read from connection c of listener l, from
// the address from: the zone's current version, or its changes since the serial the request
// holds, in as many messages as it takes, each signed with the request's TSIG key; or a
// refusal. It reports whether the connection may serve another request.
func (s *Server) serveTransfer(c net.Conn, query []byte, from netip.Addr, l *listener) bool {
	x := s.xfr
	q := new(dns.Msg)
	if err := q.Unpack(query); err != nil || len(q.Question) != 1 || q.Opcode != dns.OpcodeQuery {
		x.m.refused.WithLabelValues(refuseMalformed).Inc()
		return false
	}
	qn := q.Question[0]
	resp := new(dns.Msg)
	resp.SetReply(q)
	resp.Compress = true
	refuse := func(rcode int, reason string, key *TSIGKey, tsigErr uint16) bool {
		return s.refuseTransfer(c, q, resp, rcode, reason, key, tsigErr)
	}
	st := x.settings.Load()
	apex := canonical(qn.Name)
	zt := st.zones[apex]
	ver := (*x.versions.Load())[apex]
	snap := s.snap.Load()
	if zt == nil || ver == nil || snap.zones[apex] == nil || !snap.zones[apex].servedOn(l.index) || qn.Qclass != dns.ClassINET {
		return refuse(dns.RcodeRefused, refuseNotOffer, nil, 0)
	}
	if !allowed(zt.Allow, zt.Secondaries, from) {
		return refuse(dns.RcodeRefused, refuseNetwork, nil, 0)
	}
	t := q.IsTsig()
	if t == nil {
		return refuse(dns.RcodeRefused, refuseNoKey, nil, 0)
	}
	key, ok := st.keys[strings.ToLower(t.Hdr.Name)]
	if !ok || !zoneKey(zt, key.Name) || !strings.EqualFold(t.Algorithm, key.Algorithm) {
		return refuse(dns.RcodeNotAuth, refuseBadKey, nil, dns.RcodeBadKey)
	}
	if err := dns.TsigVerify(query, key.Secret, "", false); err != nil {
		code := uint16(dns.RcodeBadSig)
		if errors.Is(err, dns.ErrTime) {
			code = dns.RcodeBadTime
		}
		return refuse(dns.RcodeNotAuth, refuseBadSig, nil, code)
	}
	client := netkey.Of(from)
	if !x.take(client) {
		return refuse(dns.RcodeRefused, refuseBusy, &key, 0)
	}
	defer x.release(client)

	rrs, kind := transferRecords(q, ver)
	if kind == "axfr" || kind == "ixfr_axfr" {
		if !x.whole.take(s.now()) {
			return refuse(dns.RcodeRefused, refuseRate, &key, 0)
		}
	}
	start := time.Now()
	err := s.sendTransfer(c, resp, rrs, &key, t.MAC, start.Add(x.cfg.Timeout))
	result := "ok"
	if err != nil {
		result = "aborted"
		s.log.Warn("location: zone transfer ended early", "zone", apex, "type", kind, "client", from, "err", err)
	}
	x.m.transfers.WithLabelValues(apex, kind, result).Inc()
	return err == nil
}

// refuseTransfer answers the transfer request q with resp, its rcode set, and counts the
// refusal's reason: signed with key when the request's key verified, or with an unsigned
// TSIG that carries tsigErr when it did not (RFC 8945 §5.3.2). It reports whether the
// refusal was written.
func (s *Server) refuseTransfer(c net.Conn, q, resp *dns.Msg, rcode int, reason string, key *TSIGKey, tsigErr uint16) bool {
	s.xfr.m.refused.WithLabelValues(reason).Inc()
	resp.Rcode = rcode
	var out []byte
	var err error
	switch {
	case key != nil:
		out, _, err = signTSIG(resp, key, q.IsTsig().MAC, false)
	case tsigErr != 0:
		// The request's key or signature does not verify: an unsigned TSIG that says why
		// (RFC 8945 §5.3.2).
		t := q.IsTsig()
		resp.Extra = append(resp.Extra, &dns.TSIG{Hdr: dns.RR_Header{Name: t.Hdr.Name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
			Algorithm: t.Algorithm, TimeSigned: t.TimeSigned, Fudge: t.Fudge, OrigId: q.Id, Error: tsigErr})
		out, err = resp.Pack()
	default:
		out, err = resp.Pack()
	}
	if err == nil {
		_ = c.SetWriteDeadline(time.Now().Add(s.cfg.TCPIdleTimeout))
		err = writeTCP(c, out)
	}
	return err == nil
}

// transferRecords returns the records that answer the transfer request q from the zone's
// version ver, and the kind of transfer: "axfr", or for an IXFR the changes since the serial
// of the request's SOA, of the kind ver.ixfr says.
func transferRecords(q *dns.Msg, ver *zoneVersion) ([]dns.RR, string) {
	if q.Question[0].Qtype != dns.TypeIXFR {
		return ver.axfr(), "axfr"
	}
	var since uint32
	if len(q.Ns) == 1 {
		if soa, ok := q.Ns[0].(*dns.SOA); ok {
			since = soa.Serial
		}
	}
	return ver.ixfr(since)
}

// axfr returns the records of a whole transfer of v: the SOA, the zone, the SOA again.
func (v *zoneVersion) axfr() []dns.RR {
	out := make([]dns.RR, 0, len(v.rrs)+len(v.soaSigs)+2)
	out = append(out, v.soa.soa)
	out = append(out, v.soaSigs...)
	out = append(out, v.rrs...)
	return append(out, v.soa.soa)
}

// ixfr returns the records of an incremental transfer from serial since to v, and its kind
// for the metrics: the SOA alone when since is v's serial ("ixfr_current"), the changes since
// when the history holds them ("ixfr"), else the whole zone ("ixfr_axfr", RFC 1995 §4).
func (v *zoneVersion) ixfr(since uint32) ([]dns.RR, string) {
	if since == v.serial {
		return []dns.RR{v.soa.soa}, "ixfr_current"
	}
	for i, d := range v.history {
		if d.from.Serial != since {
			continue
		}
		out := []dns.RR{v.soa.soa}
		for _, d := range v.history[i:] {
			out = append(out, d.from)
			out = append(out, d.fromSigs...)
			out = append(out, d.deleted...)
			out = append(out, d.to)
			out = append(out, d.toSigs...)
			out = append(out, d.added...)
		}
		return append(out, v.soa.soa), "ixfr"
	}
	return v.axfr(), "ixfr_axfr"
}

// sendTransfer writes rrs to c in messages made from resp (the reply's header and question),
// each signed with key: the first over the request's MAC, the others over the previous
// message's, timers only (RFC 8945 §5.3.1). It stops at the deadline or past the byte bound.
func (s *Server) sendTransfer(c net.Conn, resp *dns.Msg, rrs []dns.RR, key *TSIGKey, mac string, deadline time.Time) error {
	if err := c.SetWriteDeadline(deadline); err != nil {
		return err
	}
	var sent int64
	for i, first := 0, true; i < len(rrs) || first; first = false {
		m := resp.Copy()
		m.Answer = nil
		if !first {
			m.Question = nil
		}
		size := 0
		for i < len(rrs) && (len(m.Answer) == 0 || size+dns.Len(rrs[i]) <= transferChunk) {
			size += dns.Len(rrs[i])
			m.Answer = append(m.Answer, rrs[i])
			i++
		}
		out, next, err := signTSIG(m, key, mac, !first)
		if err != nil {
			return err
		}
		mac = next
		if sent += int64(len(out)); sent > s.xfr.cfg.MaxBytes {
			return errors.New("over the bytes a transfer may send (TransferConfig.MaxBytes)")
		}
		if err := writeTCP(c, out); err != nil {
			return err
		}
	}
	return nil
}

// signTSIG packs m signed with key, over mac (the request's or the previous message's), with
// the timers only after the first message of a transfer; it returns the bytes and the MAC.
func signTSIG(m *dns.Msg, key *TSIGKey, mac string, timersOnly bool) ([]byte, string, error) {
	m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
	return dns.TsigGenerate(m, key.Secret, mac, timersOnly)
}

// writeTCP writes one DNS message with its two-byte length.
func writeTCP(c net.Conn, msg []byte) error {
	var l [2]byte
	binary.BigEndian.PutUint16(l[:], uint16(len(msg)))
	bufs := net.Buffers{l[:], msg}
	_, err := bufs.WriteTo(c)
	return err
}

// allowed reports whether from is in one of the networks allow, or is a secondary's address.
func allowed(allow []netip.Prefix, secs []Secondary, from netip.Addr) bool {
	from = from.Unmap()
	for _, p := range allow {
		if p.Contains(from) {
			return true
		}
	}
	for _, sec := range secs {
		if sec.Addr.Addr().Unmap() == from {
			return true
		}
	}
	return false
}

// zoneKey reports whether the key name is one of the zone's secondaries' keys.
func zoneKey(zt *ZoneTransfer, name string) bool {
	for _, sec := range zt.Secondaries {
		if sec.Key == name {
			return true
		}
	}
	return false
}

// take takes a transfer slot for a client network: false when every slot, or every slot
// of its network, is taken.
func (x *xfr) take(client netkey.Key) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.active >= x.cfg.MaxTransfers || x.perClient[client] >= x.cfg.MaxTransfersPerClient {
		return false
	}
	x.active++
	x.perClient[client]++
	x.m.active.Set(float64(x.active))
	return true
}

func (x *xfr) release(client netkey.Key) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.active--
	if x.perClient[client]--; x.perClient[client] <= 0 {
		delete(x.perClient, client)
	}
	x.m.active.Set(float64(x.active))
}
