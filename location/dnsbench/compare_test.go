package dnsbench

import (
	"net/netip"
	"testing"

	v2 "codeberg.org/miekg/dns"
	"codeberg.org/miekg/dns/rdata"
	v1 "github.com/miekg/dns"
)

const (
	qname = "www.demo.vigil.test."
	zone  = "demo.vigil.test."
)

var nsNames = []string{"ns-17.ns.vigil.test.", "ns-302.ns.vigil.test.", "ns-1111.ns.vigil.test.", "ns-2040.ns.vigil.test."}

// v1Response builds the typical response with the v1 library.
func v1Response() *v1.Msg {
	m := new(v1.Msg)
	m.SetQuestion(qname, v1.TypeA)
	m.Response, m.Authoritative, m.Compress = true, true, true
	for _, a := range []string{"192.0.2.1", "198.51.100.1"} {
		m.Answer = append(m.Answer, &v1.A{
			Hdr: v1.RR_Header{Name: qname, Rrtype: v1.TypeA, Class: v1.ClassINET, Ttl: 60},
			A:   netip.MustParseAddr(a).AsSlice(),
		})
	}
	for _, ns := range nsNames {
		m.Ns = append(m.Ns, &v1.NS{
			Hdr: v1.RR_Header{Name: zone, Rrtype: v1.TypeNS, Class: v1.ClassINET, Ttl: 172800},
			Ns:  ns,
		})
	}
	m.SetEdns0(1232, false)
	return m
}

// v2Response builds the same response with the v2 library.
func v2Response() *v2.Msg {
	m := v2.NewMsg(qname, v2.TypeA)
	m.RecursionDesired = false
	m.Response, m.Authoritative = true, true
	for _, a := range []string{"192.0.2.1", "198.51.100.1"} {
		m.Answer = append(m.Answer, &v2.A{
			Hdr: v2.Header{Name: qname, Class: v2.ClassINET, TTL: 60},
			A:   rdata.A{Addr: netip.MustParseAddr(a)},
		})
	}
	for _, ns := range nsNames {
		m.Ns = append(m.Ns, &v2.NS{
			Hdr: v2.Header{Name: zone, Class: v2.ClassINET, TTL: 172800},
			NS:  rdata.NS{Ns: ns},
		})
	}
	m.UDPSize = 1232
	return m
}

// TestSameWire checks that each library reads the other's response back with the same
// sections, so the benchmarks compare the same work.
func TestSameWire(t *testing.T) {
	m1 := v1Response()
	b1, err := m1.Pack()
	if err != nil {
		t.Fatal(err)
	}
	m2 := v2Response()
	m2.ID = m1.Id
	if err := m2.Pack(); err != nil {
		t.Fatal(err)
	}
	// The sizes differ a little: the libraries compress names differently.
	t.Logf("v1 packs %d bytes, v2 packs %d", len(b1), len(m2.Data))
	back := new(v1.Msg)
	if err := back.Unpack(m2.Data); err != nil {
		t.Fatalf("v1 cannot read v2's response: %v", err)
	}
	if len(back.Answer) != 2 || len(back.Ns) != 4 || back.IsEdns0() == nil {
		t.Errorf("v1 read v2's response as %v", back)
	}
	fwd := &v2.Msg{Data: b1}
	if err := fwd.Unpack(); err != nil {
		t.Fatalf("v2 cannot read v1's response: %v", err)
	}
	if len(fwd.Answer) != 2 || len(fwd.Ns) != 4 || fwd.UDPSize != 1232 {
		t.Errorf("v2 read v1's response as %v", fwd)
	}
}

// query returns a query for qname/A with EDNS0, in wire form.
func query(b *testing.B) []byte {
	m := new(v1.Msg)
	m.SetQuestion(qname, v1.TypeA)
	m.SetEdns0(1232, false)
	q, err := m.Pack()
	if err != nil {
		b.Fatal(err)
	}
	return q
}

func BenchmarkV1UnpackQuery(b *testing.B) {
	q := query(b)
	b.ReportAllocs()
	for b.Loop() {
		var m v1.Msg
		if err := m.Unpack(q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkV2UnpackQuery(b *testing.B) {
	q := query(b)
	b.ReportAllocs()
	for b.Loop() {
		m := v2.Msg{Data: q}
		if err := m.Unpack(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkV1PackResponse(b *testing.B) {
	m := v1Response()
	buf := make([]byte, 0, 1232)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.PackBuffer(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkV2PackResponse(b *testing.B) {
	m := v2Response()
	m.Data = make([]byte, 0, 1232)
	b.ReportAllocs()
	for b.Loop() {
		m.Data = m.Data[:0]
		if err := m.Pack(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkV1UnpackResponse(b *testing.B) {
	wire, err := v1Response().Pack()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var m v1.Msg
		if err := m.Unpack(wire); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkV2UnpackResponse(b *testing.B) {
	wire, err := v1Response().Pack()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m := v2.Msg{Data: wire}
		if err := m.Unpack(); err != nil {
			b.Fatal(err)
		}
	}
}
