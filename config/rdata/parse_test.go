package rdata

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// wireStrings packs rr into a message, unpacks it as a resolver would, and returns the TXT
// strings it carries, unescaped: the bytes on the wire.
func wireStrings(t *testing.T, rr dns.RR) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("x.test.", dns.TypeTXT)
	m.Answer = []dns.RR{rr}
	b, err := m.Pack()
	if err != nil {
		t.Fatalf("pack %v: %v", rr, err)
	}
	// Read the strings straight from the wire: length byte, bytes.
	var back dns.Msg
	if err := back.Unpack(b); err != nil {
		t.Fatalf("unpack: %v", err)
	}
	rdlen := int(back.Answer[0].Header().Rdlength)
	data := b[len(b)-rdlen:]
	var out []string
	for len(data) > 0 {
		n := int(data[0])
		out = append(out, string(data[1:1+n]))
		data = data[1+n:]
	}
	return out
}

// TestTXTByteForByte checks that the strings on the wire are exactly the strings written.
func TestTXTByteForByte(t *testing.T) {
	long := strings.Repeat("a", 300)
	for _, c := range []struct {
		value string
		want  []string
	}{
		{"  padded  ", []string{"  padded  "}},
		{`v=1 "quoted" \ back`, []string{`v=1 "quoted" \ back`}},
		{`"a" "b"`, []string{"a", "b"}},
		{`"  spaces kept  "`, []string{"  spaces kept  "}},
		{`"esc \"q\" \\ \065\010\255 \x"`, []string{"esc \"q\" \\ A\n\xff x"}},
		{`""`, []string{""}},
		{"\"a\"\t\"b\"", []string{"a", "b"}},
		{long, []string{long[:255], long[255:]}},
		{"héllo", []string{"héllo"}},
		{`"` + strings.Repeat("z", 255) + `"`, []string{strings.Repeat("z", 255)}},
	} {
		rr, err := Parse("x.test.", dns.TypeTXT, 60, c.value)
		if err != nil {
			t.Errorf("%q: %v", c.value, err)
			continue
		}
		got := wireStrings(t, rr)
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("%q: wire strings %q, want %q", c.value, got, c.want)
		}
	}
}

// TestParseRefuses maps each bad value to its exact message.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		t     uint16
		value string
		want  string
	}{
		{dns.TypeTXT, `"unbalanced`, "unbalanced quotes: the string opened at byte 1 is not closed"},
		{dns.TypeTXT, `"a" "b`, "unbalanced quotes: the string opened at byte 5 is not closed"},
		{dns.TypeTXT, `"a"b`, `byte 4: 'b' after a quoted string; separate quoted strings with spaces, or quote the whole value`},
		{dns.TypeTXT, `"a\`, `ends with a lone backslash; write \\ for a backslash`},
		{dns.TypeTXT, `"\25"`, `byte 2: an escape \DDD needs three decimal digits`},
		{dns.TypeTXT, `"\256"`, `byte 2: escape \256 is not a byte (000 to 255)`},
		{dns.TypeTXT, "tab\there", `holds the control character '\t'; write it as \DDD in a quoted string`},
		{dns.TypeTXT, "\"a\nb\"", `byte 3: the control character '\n'; write it as \010`},
		{dns.TypeTXT, `"` + strings.Repeat("z", 256) + `"`, "quoted string 1 is 256 bytes long, at most 255: split it into several quoted strings"},
		{dns.TypeTXT, strings.Repeat("z", MaxValue+1), "must be at most 4096 bytes, got 4097"},
		{dns.TypeA, "::ffff:192.0.2.1", `must be an IPv4 address, got "::ffff:192.0.2.1"`},
		{dns.TypeAAAA, "fe80::1%eth0", `must be an IPv6 address, got "fe80::1%eth0"`},
		{dns.TypeMX, "5 .", `a null MX (RFC 7505) has preference 0: write "0 .", got "5 ."`},
		{dns.TypeMX, "10", `must be "PREFERENCE HOST", e.g. "10 mail.example.com.", got "10"`},
		{dns.TypeNS, ".", `must be a domain name, got ".": the root name is not allowed here`},
		{dns.TypeCNAME, "*.example.test", `must be a domain name, got "*.example.test.": the wildcard label * is allowed only as the first label of a record set's name`},
		{dns.TypeSRV, "10 5 sip.example.test.", `must be "PRIORITY WEIGHT PORT TARGET", e.g. "10 5 5060 sip.example.com.", got "10 5 sip.example.test."`},
		{dns.TypeSRV, "10 5 70000 sip.example.test.", `port must be 0..65535, got "70000"`},
		{dns.TypeSRV, "10 5 5060 bad..name", `target must be a domain name, or "." for no service, got "bad..name.": empty label (two dots in a row, or a leading dot)`},
		{dns.TypeCAA, "0 issue", `must be "FLAGS TAG VALUE", e.g. "0 issue \"letsencrypt.org\"", got "0 issue"`},
		{dns.TypeCAA, "256 issue ca.test", `flags must be 0..255, got "256"`},
		{dns.TypeCAA, "0 is-sue ca.test", `tag must be 1 to 15 letters and digits (issue, issuewild, iodef), got "is-sue"`},
		{dns.TypeCAA, `0 issue "ca.test`, "value: unbalanced quotes: the string opened at byte 1 is not closed"},
		{dns.TypeCAA, `0 issue "ca.test" x`, `value: " x" after the quoted string; a CAA record holds one value`},
		{dns.TypeCAA, `0 iodef mailto:a b`, `value "mailto:a b" holds spaces: quote it`},
		{dns.TypeDS, "1 13 2", `must be "KEY-TAG ALGORITHM DIGEST-TYPE DIGEST", e.g. "60485 13 2 <64 hex digits>", got "1 13 2"`},
		{dns.TypeDS, "1 13 3 abcd", "digest type must be 1 (SHA-1), 2 (SHA-256) or 4 (SHA-384), got 3"},
		{dns.TypeDS, "1 13 2 zz", `digest must be hexadecimal, got "zz"`},
		{dns.TypeDS, "1 13 2 abcd", "a digest of type 2 (SHA-256) is 32 bytes (64 hex digits), got 2"},
		{dns.TypeSOA, "x", "type SOA has no record data Vigil serves"},
		{dns.TypeA, "", "required"},
	} {
		_, err := Parse("x.test.", c.t, 60, c.value)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s %q: error %v, want %q", dns.Type(c.t), c.value, err, c.want)
		}
	}
}

// TestCanonical checks the canonical forms, and that every accepted value packs.
func TestCanonical(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	for _, c := range []struct {
		t           uint16
		value, want string
	}{
		{dns.TypeA, "192.0.2.1", "192.0.2.1"},
		{dns.TypeAAAA, "2001:DB8:0::1", "2001:db8::1"},
		{dns.TypeAAAA, "::ffff:192.0.2.1", "::ffff:192.0.2.1"},
		{dns.TypeCNAME, "WWW.Example.Test", "www.example.test."},
		{dns.TypePTR, "host.example.test.", "host.example.test."},
		{dns.TypeMX, "010   Mail.Example.Test", "10 mail.example.test."},
		{dns.TypeMX, "0 .", "0 ."},
		{dns.TypeSRV, "10 5 5060 SIP.example.test", "10 5 5060 sip.example.test."},
		{dns.TypeSRV, "0 0 0 .", "0 0 0 ."},
		{dns.TypeDS, "60485 13 2 " + digest[:32] + " " + digest[32:], "60485 13 2 " + strings.ToUpper(digest)},
		{dns.TypeCAA, `0 issue "letsencrypt.org"`, `0 issue "letsencrypt.org"`},
		{dns.TypeTXT, " as written ", " as written "},
	} {
		if got := Canonical(c.t, c.value); got != c.want {
			t.Errorf("Canonical(%s, %q) = %q, want %q", dns.Type(c.t), c.value, got, c.want)
		}
		k1, err1 := Key(c.t, c.value)
		k2, err2 := Key(c.t, Canonical(c.t, c.value))
		if err1 != nil || err2 != nil || k1 != k2 {
			t.Errorf("%s %q: key %q (%v), canonical's key %q (%v)", dns.Type(c.t), c.value, k1, err1, k2, err2)
		}
	}
}

// TestKeySameData checks that values written differently with the same data are one record,
// and that different data is not.
func TestKeySameData(t *testing.T) {
	same := [][2]string{{`"ab"`, "ab"}, {`"a\"b"`, `a"b`}, {`"\065"`, "A"}}
	for _, p := range same {
		a, _ := Key(dns.TypeTXT, p[0])
		b, _ := Key(dns.TypeTXT, p[1])
		if a != b {
			t.Errorf("%q and %q: keys differ", p[0], p[1])
		}
	}
	a, _ := Key(dns.TypeTXT, `"a" "b"`)
	b, _ := Key(dns.TypeTXT, "ab")
	if a == b {
		t.Errorf(`"a" "b" and ab: same key, but two strings are not one`)
	}
	c1, _ := Key(dns.TypeCAA, `0 issue ca.test`)
	c2, _ := Key(dns.TypeCAA, `0 issue "ca.test"`)
	if c1 != c2 {
		t.Errorf("CAA quoted and unquoted: keys differ")
	}
}

// A CAA value is the rest of the record data (RFC 8659 §4.1), however long: values past
// what miekg/dns packs in a dns.CAA (1,025 bytes of escaped text: 1,100 ASCII bytes, or 300
// bytes of UTF-8) parse, pack in a message, read back as the bytes written, have a key, and
// a short value still parses as a dns.CAA with the same wire form.
func TestLongCAA(t *testing.T) {
	utf := strings.Repeat("é", 150) // 300 bytes, each escaped \DDD
	for _, data := range []string{strings.Repeat("a", 1100), utf, strings.Repeat("b", 4000)} {
		value := `0 issue "` + data + `"`
		rr, err := Parse("x.test.", dns.TypeCAA, 300, value)
		if err != nil {
			t.Fatalf("%d bytes: %v", len(data), err)
		}
		if _, err := Key(dns.TypeCAA, value); err != nil {
			t.Fatalf("%d bytes: key: %v", len(data), err)
		}
		m := new(dns.Msg)
		m.SetQuestion("x.test.", dns.TypeCAA)
		m.Answer = []dns.RR{rr}
		wire, err := m.Pack()
		if err != nil {
			t.Fatalf("%d bytes: pack: %v", len(data), err)
		}
		var back dns.Msg
		if err := back.Unpack(wire); err != nil {
			t.Fatalf("%d bytes: unpack: %v", len(data), err)
		}
		caa, ok := back.Answer[0].(*dns.CAA)
		if !ok || caa.Tag != "issue" || caa.Flag != 0 || caa.Value != data {
			t.Fatalf("%d bytes: read back %v", len(data), back.Answer[0])
		}
	}
	short, err := Parse("x.test.", dns.TypeCAA, 300, `0 issue "ca.test"`)
	if _, ok := short.(*dns.CAA); err != nil || !ok {
		t.Fatalf("short CAA: %T %v", short, err)
	}
}
