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
