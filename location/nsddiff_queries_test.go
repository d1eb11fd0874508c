package location

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// diffQuery is one query of the differential test: a message, or raw bytes for the malformed
// ones, and how it is sent.
type diffQuery struct {
	name  string // what it asks, for messages: "www.zdiff.test. A edns=1232"
	qname string
	qtype uint16
	msg   *dns.Msg // nil for raw
	raw   []byte
	tcp   bool
	kind  string // "plain", "case", "edns", "tcp", "malformed"
}

// wire returns the query in wire form with ID id.
func (q diffQuery) wire(id uint16) []byte {
	if q.msg == nil {
		b := slices.Clone(q.raw)
		binary.BigEndian.PutUint16(b, id)
		return b
	}
	m := q.msg.Copy()
	m.Id = id
	b, err := m.Pack()
	if err != nil {
		panic(fmt.Sprintf("differential query %s does not pack: %v", q.name, err))
	}
	return b
}

// String names the query.
func (q diffQuery) String() string {
	tr := "udp"
	if q.tcp {
		tr = "tcp"
	}
	return q.kind + " " + q.name + " " + tr
}

// diffNames returns the names the differential test asks about: every owner name of the zones,
// the apexes, and names that exist nowhere, under wildcards, below delegations and empty
// non-terminals, in the hosted child zone, and outside every zone.
func diffNames(doc *config.Document) []string {
	var names []string
	for _, z := range doc.Zones {
		names = append(names, z.Name)
		for _, rs := range z.RecordSets {
			names = append(names, rs.Name)
		}
	}
	names = append(names,
		"nope.zdiff.test.", "x.www.zdiff.test.", "deep.zdiff.test.", "b.deep.zdiff.test.",
		"x.wild.zdiff.test.", "a.b.wild.zdiff.test.", "wild.zdiff.test.", "x.sub.wild.zdiff.test.",
		"x.cname.zdiff.test.", "x.mx.zdiff.test.", "host.deleg.zdiff.test.", "x.ns1.deleg.zdiff.test.",
		"host.deleg2.zdiff.test.", "www.child.zdiff.test.", "nope.child.zdiff.test.", "x.ns1.child.zdiff.test.",
		"anything.star.test.", "a.b.star.test.", "x.deep.star.test.", "deep.star.test.", "x.star.test.",
		"y.x.star.test.", "host.sub.glue.test.", "sub.glue.test.", "nope.glue.test.",
		"zdiff.test.example.", "test.", "elsewhere.test.")
	slices.Sort(names)
	return slices.Compact(names)
}

// diffTypes are the types asked of every name.
func diffTypes() []uint16 {
	return []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT, dns.TypeMX, dns.TypeNS, dns.TypeSOA,
		dns.TypeSRV, dns.TypeCAA, dns.TypePTR, dns.TypeDS, dns.TypeHINFO}
}

// diffQueries returns the queries of the differential test, in a fixed order.
func diffQueries(doc *config.Document) []diffQuery {
	var out []diffQuery
	add := func(kind string, m *dns.Msg, tcp bool, label string) {
		q := m.Question[0]
		out = append(out, diffQuery{name: q.Name + " " + dns.Type(q.Qtype).String() + label, qname: q.Name,
			qtype: q.Qtype, msg: m, tcp: tcp, kind: kind})
	}
	names := diffNames(doc)
	// Every name by every type, over UDP with EDNS0 as resolvers ask today.
	for _, n := range names {
		for _, t := range diffTypes() {
			add("plain", query(n, t, 1232), false, " edns=1232")
		}
	}
	// Case variants: the question echoed as asked, the data as the zone holds it.
	rnd := rand.New(rand.NewPCG(23, 23))
	for _, n := range names {
		for _, t := range []uint16{dns.TypeA, dns.TypeMX, dns.TypeTXT} {
			add("case", query(mixCase(n, rnd), t, 1232), false, " edns=1232")
		}
	}
	// EDNS variants and sizes, for answers small and too large.
	for _, n := range []string{"www.zdiff.test.", "zdiff.test.", "glue.test.", "big.glue.test.", "host.sub.glue.test.", "long.zdiff.test.", "nope.zdiff.test."} {
		for _, t := range []uint16{dns.TypeA, dns.TypeNS, dns.TypeTXT, dns.TypeMX} {
			add("edns", query(n, t, 0), false, " no-edns")
			add("edns", query(n, t, 512), false, " edns=512")
			add("edns", withDO(query(n, t, 4096)), false, " edns=4096 do")
			v1 := query(n, t, 1232)
			v1.IsEdns0().SetVersion(1)
			add("edns", v1, false, " edns-version=1")
		}
	}
	// TCP: the same names, no payload limit.
	for _, n := range names {
		for _, t := range []uint16{dns.TypeA, dns.TypeNS, dns.TypeTXT} {
			add("tcp", query(n, t, 0), true, "")
		}
	}
	return append(out, malformedQueries()...)
}

// withDO sets the DO bit of m's OPT record and returns m.
func withDO(m *dns.Msg) *dns.Msg {
	m.IsEdns0().SetDo()
	return m
}

// mixCase returns name with the case of each letter chosen by rnd.
func mixCase(name string, rnd *rand.Rand) string {
	b := []byte(name)
	for i, c := range b {
		if c >= 'a' && c <= 'z' && rnd.IntN(2) == 0 {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// malformedQueries returns queries with headers or sections that are wrong in one way each.
func malformedQueries() []diffQuery {
	var out []diffQuery
	msg := func(label string, f func(m *dns.Msg)) {
		m := query("www.zdiff.test.", dns.TypeA, 0)
		f(m)
		out = append(out, diffQuery{name: label, qname: m.Question[0].Name, qtype: m.Question[0].Qtype, msg: m, kind: "malformed"})
	}
	for _, op := range []int{dns.OpcodeIQuery, dns.OpcodeStatus, 3, dns.OpcodeNotify, dns.OpcodeUpdate, 15} {
		msg(fmt.Sprintf("opcode %d", op), func(m *dns.Msg) { m.Opcode = op })
	}
	msg("two questions", func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) })
	msg("class CH", func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS })
	msg("class ANY", func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassANY })
	msg("type OPT", func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeOPT })
	msg("AXFR over UDP", func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeAXFR })
	msg("IXFR", func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeIXFR })
	msg("ANY", func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeANY })
	msg("RD clear", func(m *dns.Msg) { m.RecursionDesired = false })
	msg("CD set", func(m *dns.Msg) { m.CheckingDisabled = true })
	msg("AD set", func(m *dns.Msg) { m.AuthenticatedData = true })
	msg("Z set", func(m *dns.Msg) { m.Zero = true })
	msg("TC set", func(m *dns.Msg) { m.Truncated = true })
	msg("AA set", func(m *dns.Msg) { m.Authoritative = true })
	msg("a record in the answer section", func(m *dns.Msg) {
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "www.zdiff.test.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: []byte{192, 0, 2, 9}}}
	})
	msg("a record in the authority section", func(m *dns.Msg) {
		m.Ns = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "www.zdiff.test.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: []byte{192, 0, 2, 9}}}
	})
	msg("two OPT records", func(m *dns.Msg) {
		m.SetEdns0(1232, false)
		m.Extra = append(m.Extra, m.Extra[0])
	})
	msg("OPT not at the root", func(m *dns.Msg) {
		m.SetEdns0(1232, false)
		m.Extra[0].Header().Name = "www.zdiff.test."
	})
	base := query("www.zdiff.test.", dns.TypeA, 0)
	good, _ := base.Pack()
	raw := func(label string, b []byte) {
		out = append(out, diffQuery{name: label, qname: "www.zdiff.test.", qtype: dns.TypeA, raw: b, kind: "malformed"})
	}
	hdr := func(qd, an, ns, ar uint16, flags uint16) []byte {
		b := make([]byte, 12)
		binary.BigEndian.PutUint16(b[2:], flags)
		binary.BigEndian.PutUint16(b[4:], qd)
		binary.BigEndian.PutUint16(b[6:], an)
		binary.BigEndian.PutUint16(b[8:], ns)
		binary.BigEndian.PutUint16(b[10:], ar)
		return b
	}
	question := good[12:]
	name := question[:len(question)-4]
	raw("no question", hdr(0, 0, 0, 0, 0x0100))
	raw("question without type and class", append(hdr(1, 0, 0, 0, 0x0100), name...))
	raw("question without class", append(hdr(1, 0, 0, 0, 0x0100), question[:len(question)-2]...))
	raw("question count 2, one question", append(hdr(2, 0, 0, 0, 0x0100), question...))
	raw("additional count 1, none", append(hdr(1, 0, 0, 1, 0x0100), question...))
	raw("answer count 1, none", append(hdr(1, 1, 0, 0, 0x0100), question...))
	raw("additional record cut short", append(append(hdr(1, 0, 0, 1, 0x0100), question...), 0, 0, 41, 4))
	raw("trailing garbage", append(append(hdr(1, 0, 0, 0, 0x0100), question...), 1, 2, 3))
	raw("name compression loop", append(hdr(1, 0, 0, 0, 0x0100), 0xc0, 0x0c, 0, 1, 0, 1))
	raw("label longer than the packet", append(hdr(1, 0, 0, 0, 0x0100), 63, 'a'))
	raw("response bit set", append(hdr(1, 0, 0, 0, 0x8100), question...))
	raw("header only", hdr(0, 0, 0, 0, 0))
	raw("shorter than a header", []byte{0, 0, 1})
	raw("upper-case question", append(hdr(1, 0, 0, 0, 0x0100), []byte(strings.ToUpper(string(question)))...))
	return out
}
