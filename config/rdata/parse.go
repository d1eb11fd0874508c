package rdata

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// MaxValue is the longest record value, as written: it bounds the work of parsing one, and
// leaves room in a DNS message for a record set of several.
const MaxValue = 4096

// Types returns the record types whose data Parse reads, in the order messages list them.
func Types() []uint16 {
	return []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT, dns.TypeMX, dns.TypeNS,
		dns.TypeSRV, dns.TypeCAA, dns.TypePTR, dns.TypeDS}
}

// Parse returns the resource record of owner name (absolute), type rrtype and TTL ttl whose
// data is value, written as a record set's value is:
//
//   - A: an IPv4 address; AAAA: an IPv6 address (without a zone).
//   - CNAME, NS, PTR: a domain name, fully qualified, the final dot optional.
//   - MX: "PREFERENCE HOST"; "0 ." is the null MX of RFC 7505.
//   - SRV: "PRIORITY WEIGHT PORT TARGET" (RFC 2782); the target "." means no service.
//   - TXT: one or more quoted strings ("a" "b", with the escapes \" \\ \DDD), or any other
//     text taken byte for byte and cut into strings of 255 bytes.
//   - CAA: "FLAGS TAG VALUE" (RFC 8659), e.g. 0 issue "letsencrypt.org"; the value quoted, or
//     one word.
//   - DS: "KEY-TAG ALGORITHM DIGEST-TYPE DIGEST" (RFC 4034), the digest in hexadecimal.
//
// Domain names in the data are lower-cased. The error says what is wrong, in words meant to
// follow a value's path.
func Parse(name string, rrtype uint16, ttl uint32, value string) (dns.RR, error) {
	if value == "" {
		return nil, errors.New("required")
	}
	if len(value) > MaxValue {
		return nil, fmt.Errorf("must be at most %d bytes, got %d", MaxValue, len(value))
	}
	h := dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
	switch rrtype {
	case dns.TypeA:
		a, err := netip.ParseAddr(value)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("must be an IPv4 address, got %q", value)
		}
		return &dns.A{Hdr: h, A: a.AsSlice()}, nil
	case dns.TypeAAAA:
		a, err := netip.ParseAddr(value)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return nil, fmt.Errorf("must be an IPv6 address, got %q", value)
		}
		b := a.As16()
		return &dns.AAAA{Hdr: h, AAAA: b[:]}, nil
	case dns.TypeCNAME, dns.TypeNS, dns.TypePTR:
		target := Fqdn(value)
		if p := NameProblem(target); p != "" {
			return nil, fmt.Errorf("must be a domain name, got %q: %s", target, p)
		}
		switch rrtype {
		case dns.TypeCNAME:
			return &dns.CNAME{Hdr: h, Target: target}, nil
		case dns.TypeNS:
			return &dns.NS{Hdr: h, Ns: target}, nil
		}
		return &dns.PTR{Hdr: h, Ptr: target}, nil
	case dns.TypeMX:
		return parseMX(h, value)
	case dns.TypeSRV:
		return parseSRV(h, value)
	case dns.TypeTXT:
		ss, err := textStrings(value)
		if err != nil {
			return nil, err
		}
		for i, s := range ss {
			ss[i] = escape(s)
		}
		return &dns.TXT{Hdr: h, Txt: ss}, nil
	case dns.TypeCAA:
		return parseCAA(h, value)
	case dns.TypeDS:
		return parseDS(h, value)
	}
	return nil, fmt.Errorf("type %s has no record data Vigil serves", dns.Type(rrtype))
}

// Canonical returns value in the one form in which equal data is written equally: addresses
// as net/netip writes them, domain names lower-case with the final dot, numbers in decimal
// without leading zeros, a DS digest in upper case. TXT and CAA values stay as written (their
// bytes are the data). A value that does not parse is returned unchanged, for validation to
// report.
func Canonical(rrtype uint16, value string) string {
	rr, err := Parse(".", rrtype, 0, value)
	if err != nil {
		return value
	}
	switch rr := rr.(type) {
	case *dns.A:
		a, _ := netip.AddrFromSlice(rr.A)
		return a.String()
	case *dns.AAAA:
		a, _ := netip.AddrFromSlice(rr.AAAA)
		return a.String()
	case *dns.CNAME:
		return rr.Target
	case *dns.NS:
		return rr.Ns
	case *dns.PTR:
		return rr.Ptr
	case *dns.MX:
		return strconv.Itoa(int(rr.Preference)) + " " + rr.Mx
	case *dns.SRV:
		return fmt.Sprintf("%d %d %d %s", rr.Priority, rr.Weight, rr.Port, rr.Target)
	case *dns.DS:
		return fmt.Sprintf("%d %d %d %s", rr.KeyTag, rr.Algorithm, rr.DigestType, rr.Digest)
	}
	return value
}

// Key returns the record data of value in wire form, as a string: two values with the same
// key are the same record (RFC 2181 §5 counts such duplicates as one).
func Key(rrtype uint16, value string) (string, error) {
	rr, err := Parse(".", rrtype, 0, value)
	if err != nil {
		return "", err
	}
	buf := make([]byte, dns.Len(rr)+1)
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return "", fmt.Errorf("does not pack: %w", err)
	}
	const header = 1 + 10 // the root owner name, type, class, TTL and length
	return string(buf[header:n]), nil
}

// number reads field f (named what in messages) as an unsigned decimal of at most bits bits.
func number(f, what string, bits int) (uint64, error) {
	n, err := strconv.ParseUint(f, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s must be 0..%d, got %q", what, uint64(1)<<bits-1, f)
	}
	return n, nil
}

// parseMX reads "PREFERENCE HOST"; "0 ." is a null MX.
func parseMX(h dns.RR_Header, value string) (dns.RR, error) {
	f := strings.Fields(value)
	if len(f) != 2 {
		return nil, fmt.Errorf("must be \"PREFERENCE HOST\", e.g. \"10 mail.example.com.\", got %q", value)
	}
	pref, err := number(f[0], "preference", 16)
	if err != nil {
		return nil, err
	}
	host := Fqdn(f[1])
	if host == "." {
		if pref != 0 {
			return nil, fmt.Errorf("a null MX (RFC 7505) has preference 0: write \"0 .\", got %q", value)
		}
	} else if p := NameProblem(host); p != "" {
		return nil, fmt.Errorf("mail host must be a domain name, got %q: %s", host, p)
	}
	return &dns.MX{Hdr: h, Preference: uint16(pref), Mx: host}, nil
}

// parseSRV reads "PRIORITY WEIGHT PORT TARGET"; the target "." says the service is not offered.
func parseSRV(h dns.RR_Header, value string) (dns.RR, error) {
	f := strings.Fields(value)
	if len(f) != 4 {
		return nil, fmt.Errorf("must be \"PRIORITY WEIGHT PORT TARGET\", e.g. \"10 5 5060 sip.example.com.\", got %q", value)
	}
	var n [3]uint64
	for i, what := range []string{"priority", "weight", "port"} {
		v, err := number(f[i], what, 16)
		if err != nil {
			return nil, err
		}
		n[i] = v
	}
	target := Fqdn(f[3])
	if target != "." {
		if p := NameProblem(target); p != "" {
			return nil, fmt.Errorf("target must be a domain name, or \".\" for no service, got %q: %s", target, p)
		}
	}
	return &dns.SRV{Hdr: h, Priority: uint16(n[0]), Weight: uint16(n[1]), Port: uint16(n[2]), Target: target}, nil
}

// parseCAA reads "FLAGS TAG VALUE" (RFC 8659 §4.1.1): the value one quoted string, or one
// word.
func parseCAA(h dns.RR_Header, value string) (dns.RR, error) {
	const form = `must be "FLAGS TAG VALUE", e.g. "0 issue \"letsencrypt.org\"", got %q`
	flags, rest, ok := cutField(value)
	tag, val, ok2 := cutField(rest)
	if !ok || !ok2 || val == "" {
		return nil, fmt.Errorf(form, value)
	}
	fl, err := number(flags, "flags", 8)
	if err != nil {
		return nil, err
	}
	if len(tag) > 15 || strings.IndexFunc(tag, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) >= 0 {
		return nil, fmt.Errorf("tag must be 1 to 15 letters and digits (issue, issuewild, iodef), got %q", tag)
	}
	var data string
	if strings.HasPrefix(val, `"`) {
		s, next, err := quoted(val, 0)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		if strings.TrimRight(val[next:], " \t") != "" {
			return nil, fmt.Errorf("value: %q after the quoted string; a CAA record holds one value", val[next:])
		}
		data = s
	} else {
		if strings.ContainsAny(val, " \t") {
			return nil, fmt.Errorf("value %q holds spaces: quote it", val)
		}
		if err := plainProblem(val); err != nil {
			return nil, fmt.Errorf("value %w", err)
		}
		data = val
	}
	if esc := escape(data); len(esc) <= maxOctetText {
		return &dns.CAA{Hdr: h, Flag: uint8(fl), Tag: tag, Value: esc}, nil
	}
	// A CAA value is the rest of the record data (RFC 8659 §4.1), up to MaxValue
	// here; miekg/dns packs a dns.CAA value only up to 1,025 bytes of its escaped text, so
	// a longer one is kept as its wire data (RFC 3597), which packs and signs byte for byte
	// as the same record.
	wire := make([]byte, 0, 2+len(tag)+len(data))
	wire = append(wire, uint8(fl), uint8(len(tag)))
	wire = append(wire, tag...)
	wire = append(wire, data...)
	return &dns.RFC3597{Hdr: h, Rdata: hex.EncodeToString(wire)}, nil
}

// maxOctetText is the longest escaped text of a dns.CAA value that miekg/dns packs: 256
// bytes each written \DDD, and one more.
const maxOctetText = 256*4 + 1

// cutField returns the first space-separated field of s and the rest after the spaces that
// follow it.
func cutField(s string) (field, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, "", s != ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t"), true
}

// digestLen returns the name and length of a DS digest type of RFC 4034, 4509 or 6605 that
// is in use (RFC 8624 §3.3); ok is false for any other.
func digestLen(t uint64) (name string, n int, ok bool) {
	switch t {
	case 1:
		return "SHA-1", 20, true
	case 2:
		return "SHA-256", 32, true
	case 4:
		return "SHA-384", 48, true
	}
	return "", 0, false
}

// parseDS reads "KEY-TAG ALGORITHM DIGEST-TYPE DIGEST"; the digest may be split by spaces.
func parseDS(h dns.RR_Header, value string) (dns.RR, error) {
	f := strings.Fields(value)
	if len(f) < 4 {
		return nil, fmt.Errorf("must be \"KEY-TAG ALGORITHM DIGEST-TYPE DIGEST\", e.g. \"60485 13 2 <64 hex digits>\", got %q", value)
	}
	tag, err := number(f[0], "key tag", 16)
	if err != nil {
		return nil, err
	}
	alg, err := number(f[1], "algorithm", 8)
	if err != nil {
		return nil, err
	}
	dt, err := number(f[2], "digest type", 8)
	if err != nil {
		return nil, err
	}
	hash, size, known := digestLen(dt)
	if !known {
		return nil, fmt.Errorf("digest type must be 1 (SHA-1), 2 (SHA-256) or 4 (SHA-384), got %d", dt)
	}
	digest := strings.Join(f[3:], "")
	b, err := hex.DecodeString(digest)
	if err != nil {
		return nil, fmt.Errorf("digest must be hexadecimal, got %q", digest)
	}
	if len(b) != size {
		return nil, fmt.Errorf("a digest of type %d (%s) is %d bytes (%d hex digits), got %d", dt, hash, size, 2*size, len(b))
	}
	return &dns.DS{Hdr: h, KeyTag: uint16(tag), Algorithm: uint8(alg), DigestType: uint8(dt),
		Digest: strings.ToUpper(digest)}, nil
}
