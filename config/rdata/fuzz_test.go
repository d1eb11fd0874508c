package rdata

import (
	"testing"

	"github.com/miekg/dns"
)

// FuzzParse checks, for any value of any type: Parse does not panic; what it accepts packs
// into a message and reads back as the same record (TXT strings byte for byte); the
// canonical form is stable and means the same data.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "2001:db8::1", "www.example.test", "10 mail.example.test.",
		"0 .", `"a" "b\065"`, " plain text ", "10 5 5060 sip.example.test.", `0 issue "ca.test"`,
		"60485 13 2 " + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12", `"unbalanced`} {
		f.Add(uint8(0), s)
	}
	types := Types()
	f.Fuzz(func(t *testing.T, ti uint8, value string) {
		rrtype := types[int(ti)%len(types)]
		rr, err := Parse("x.test.", rrtype, 60, value)
		if err != nil {
			return
		}
		m := new(dns.Msg)
		m.SetQuestion("x.test.", rrtype)
		m.Answer = []dns.RR{rr}
		b, err := m.Pack()
		if err != nil {
			t.Fatalf("%s %q accepted but does not pack: %v", dns.Type(rrtype), value, err)
		}
		var back dns.Msg
		if err := back.Unpack(b); err != nil || len(back.Answer) != 1 {
			t.Fatalf("%s %q: does not unpack: %v", dns.Type(rrtype), value, err)
		}
		if packed(t, rr) != packed(t, back.Answer[0]) {
			t.Fatalf("%s %q: sent %v, read back %v", dns.Type(rrtype), value, rr, back.Answer[0])
		}
		if rrtype == dns.TypeTXT {
			want, _ := textStrings(value)
			got := wireStrings(t, rr)
			if len(got) != len(want) {
				t.Fatalf("%q: wire strings %q, want %q", value, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%q: wire strings %q, want %q", value, got, want)
				}
			}
		}
		c := Canonical(rrtype, value)
		if Canonical(rrtype, c) != c {
			t.Fatalf("%s %q: canonical %q is not stable", dns.Type(rrtype), value, c)
		}
		k1, err1 := Key(rrtype, value)
		k2, err2 := Key(rrtype, c)
		if err1 != nil || err2 != nil || k1 != k2 {
			t.Fatalf("%s %q: canonical %q means other data (%v, %v)", dns.Type(rrtype), value, c, err1, err2)
		}
	})
}

// packed returns rr in wire form, without name compression.
func packed(t *testing.T, rr dns.RR) string {
	t.Helper()
	buf := make([]byte, dns.Len(rr)+64)
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		t.Fatalf("pack %v: %v", rr, err)
	}
	return string(buf[:n])
}
