package location

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
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

// FuzzAcceptedIsServed checks the promise of one parser: any record value of any type that
// the configuration accepts compiles at the location, and is answered with exactly the data
// written (the wire form of rdata.Key). A value the configuration refuses is not tried.
func FuzzAcceptedIsServed(f *testing.F) {
	for _, v := range []string{"192.0.2.1", "2001:db8::1", "www.example.test", "10 mail.example.test.", `"a" "b"`,
		" v=spf1 -all ", `\\"`, "0 .", "10 5 5060 sip.example.test.", `0 issue "ca.test"`, `"unbalanced`} {
		f.Add(uint8(3), v)
	}
	types := []config.RecordType{config.TypeA, config.TypeAAAA, config.TypeCNAME, config.TypeTXT, config.TypeMX,
		config.TypeSRV, config.TypeCAA, config.TypePTR}
	f.Fuzz(func(t *testing.T, ti uint8, value string) {
		typ := types[int(ti)%len(types)]
		doc := map[string]any{"regions": []string{"a", "b", "c"}, "zones": []any{map[string]any{
			"name": "z.test", "name_servers": []string{"ns1.z.test."},
			"record_sets": []any{map[string]any{"name": "n", "type": typ, "records": []any{map[string]any{"value": value}}}},
		}}}
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(data)
		if err != nil {
			return // refused with its path: nothing to serve
		}
		snap, err := NewSnapshot(cfg.Zones, nil)
		if err != nil {
			t.Fatalf("%s %q accepted by the configuration, refused by the location: %v", typ, value, err)
		}
		s, err := New(Config{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		s.SetSnapshot(snap)
		code := dns.StringToType[string(typ)]
		q := query("n.z.test.", code, 0)
		b, _ := q.Pack()
		var r dns.Msg
		if err := r.Unpack(s.Respond(b, Request{TCP: true, NameServer: -1})); err != nil {
			t.Fatalf("%s %q: response does not unpack: %v", typ, value, err)
		}
		want, err := rdata.Key(code, cfg.Zones[0].RecordSets[0].Records[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Answer) != 1 {
			t.Fatalf("%s %q: %d answers, want 1: %v", typ, value, len(r.Answer), &r)
		}
		buf := make([]byte, dns.Len(r.Answer[0])+64)
		r.Answer[0].Header().Name = "."
		n, err := dns.PackRR(r.Answer[0], buf, 0, nil, false)
		if err != nil || string(buf[11:n]) != want {
			t.Fatalf("%s %q: served %v, not the data written (%v)", typ, value, r.Answer[0], err)
		}
	})
}
