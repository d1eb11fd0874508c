package location

import (
	"encoding/binary"
	"testing"

	"github.com/miekg/dns"
)

// FuzzRespond feeds raw bytes to the query path, without sockets, over UDP and TCP and on a
// virtual name server. Whatever the bytes: no panic; a response, when there is one, is a
// well-formed DNS response to that query's ID that fits the transport's limit.
func FuzzRespond(f *testing.F) {
	for _, q := range []*dns.Msg{
		query("www.example.test.", dns.TypeA, 0),
		query("WWW.example.test.", dns.TypeANY, 1232),
		query("chain1.example.test.", dns.TypeA, 4096),
		query("big.example.test.", dns.TypeTXT, 0),
		query("nope.example.test.", dns.TypeAAAA, 512),
		query("host.sub.example.test.", dns.TypeA, 0),
		query("ns.vigil.test.", dns.TypeNS, 1232),
		query("example.org.", dns.TypeSOA, 0),
	} {
		f.Add(packed(f, q), false)
	}
	f.Add([]byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1}, false)
	f.Add([]byte{0, 0, 0x28, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 6, 0, 1, 0, 0, 0x29, 0x10, 0, 1, 0, 0, 0, 0, 0}, true)
	f.Add([]byte{}, true)

	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		f.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(f, testZones(), testShards()))
	s.SetVerdicts(map[string]bool{"p": false, "w1": false})
	f.Fuzz(func(t *testing.T, b []byte, tcp bool) {
		for _, ns := range []int{-1, 5} {
			out := s.Respond(b, Request{TCP: tcp, NameServer: ns})
			if out == nil {
				continue
			}
			limit := dns.MaxMsgSize
			if !tcp {
				limit = DefaultUDPSize
			}
			if len(out) > limit {
				t.Fatalf("a %d-byte response over a %d-byte limit", len(out), limit)
			}
			var r dns.Msg
			if err := r.Unpack(out); err != nil {
				t.Fatalf("response does not unpack: %v", err)
			}
			if !r.Response || r.RecursionAvailable {
				t.Fatalf("response with QR %v, RA %v", r.Response, r.RecursionAvailable)
			}
			if len(b) >= 2 && r.Id != binary.BigEndian.Uint16(b) {
				t.Fatalf("response ID %d for query ID %d", r.Id, binary.BigEndian.Uint16(b))
			}
		}
	})
}

// FuzzRecordValue compiles arbitrary record values of every served type: an error or a
// record that packs, never a panic.
func FuzzRecordValue(f *testing.F) {
	for _, v := range []string{"192.0.2.1", "2001:db8::1", "www", "10 mail", `"a" "b"`, "v=spf1 -all", "@", `\\"`, "0 ."} {
		f.Add(v)
	}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT, dns.TypeMX, dns.TypeNS}
	f.Fuzz(func(t *testing.T, value string) {
		for _, rtype := range types {
			rr, err := buildRR("n.z.test.", rtype, 60, value, "z.test.")
			if err != nil {
				continue
			}
			m := new(dns.Msg)
			m.Answer = []dns.RR{rr}
			if _, err := m.Pack(); err != nil {
				t.Errorf("%s %q: built but does not pack: %v", dns.TypeToString[rtype], value, err)
			}
		}
	})
}
