package zonefile

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config/rdata"
	"github.com/vigil-dns/vigil/internal/safetext"
)

// value writes the data of rr, of a type Vigil serves, as a record set's value, and checks it
// against package rdata, the parser validation and the locations use: the value must read
// back as rr's data, byte for byte, domain names lower-cased (equal names in DNS, RFC 4343).
func value(rr dns.RR) (string, error) {
	v, err := write(rr)
	if err != nil {
		return "", err
	}
	h := rr.Header()
	back, err := rdata.Parse(h.Name, h.Rrtype, h.Ttl, v)
	if err != nil {
		return "", err
	}
	want, err := wireData(lowerNames(rr))
	if err != nil {
		return "", fmt.Errorf("does not pack: %w", err)
	}
	got, err := wireData(back)
	if err != nil || !bytes.Equal(got, want) {
		return "", fmt.Errorf("Vigil's record parser reads the value %q back as other data", v)
	}
	return v, nil
}

// write writes rr's data in the form of a record set's value.
func write(rr dns.RR) (string, error) {
	switch rr := rr.(type) {
	case *dns.A:
		a, ok := netip.AddrFromSlice(rr.A.To4())
		if !ok {
			return "", errors.New("not an IPv4 address")
		}
		return a.String(), nil
	case *dns.AAAA:
		a, ok := netip.AddrFromSlice(rr.AAAA.To16())
		if !ok {
			return "", errors.New("not an IPv6 address")
		}
		return a.String(), nil
	case *dns.CNAME:
		return rdata.Lower(rr.Target), nil
	case *dns.NS:
		return rdata.Lower(rr.Ns), nil
	case *dns.PTR:
		return rdata.Lower(rr.Ptr), nil
	case *dns.MX:
		return strconv.Itoa(int(rr.Preference)) + " " + rdata.Lower(rr.Mx), nil
	case *dns.SRV:
		return fmt.Sprintf("%d %d %d %s", rr.Priority, rr.Weight, rr.Port, rdata.Lower(rr.Target)), nil
	case *dns.DS:
		return fmt.Sprintf("%d %d %d %s", rr.KeyTag, rr.Algorithm, rr.DigestType, strings.ToUpper(rr.Digest)), nil
	case *dns.TXT:
		w, err := wireData(rr)
		if err != nil {
			return "", err
		}
		var parts []string
		for len(w) > 0 {
			n := int(w[0])
			if 1+n > len(w) {
				return "", errors.New("malformed character string")
			}
			parts = append(parts, quote(w[1:1+n]))
			w = w[1+n:]
		}
		return strings.Join(parts, " "), nil
	case *dns.CAA:
		w, err := wireData(rr)
		if err != nil {
			return "", err
		}
		if len(w) < 2 || 2+int(w[1]) > len(w) {
			return "", errors.New("malformed CAA data")
		}
		return fmt.Sprintf("%d %s %s", w[0], w[2:2+w[1]], quote(w[2+w[1]:])), nil
	}
	return "", fmt.Errorf("type %s has no record data Vigil serves", dns.Type(rr.Header().Rrtype))
}

// lowerNames returns rr with the domain names in its data lower-cased, as Vigil serves them.
func lowerNames(rr dns.RR) dns.RR {
	rr = dns.Copy(rr)
	switch rr := rr.(type) {
	case *dns.CNAME:
		rr.Target = rdata.Lower(rr.Target)
	case *dns.NS:
		rr.Ns = rdata.Lower(rr.Ns)
	case *dns.PTR:
		rr.Ptr = rdata.Lower(rr.Ptr)
	case *dns.MX:
		rr.Mx = rdata.Lower(rr.Mx)
	case *dns.SRV:
		rr.Target = rdata.Lower(rr.Target)
	}
	return rr
}

// quote writes the bytes of a character string as one quoted string of a record value:
// quotes and backslashes escaped, text that is UTF-8 kept as it reads (so that a configuration
// shows "café"), and every byte that is not printable text, or that would reorder or drive a
// terminal (package safetext), written \DDD.
func quote(b []byte) string {
	var s strings.Builder
	s.WriteByte('"')
	text := utf8.Valid(b)
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if text {
			r, size = utf8.DecodeRune(b[i:])
		}
		switch {
		case r == '"' || r == '\\':
			s.WriteByte('\\')
			s.WriteByte(byte(r))
		case r < 0x20 || r == 0x7f || (!text && r > 0x7e) || safetext.Unsafe(r):
			for _, c := range b[i : i+size] {
				fmt.Fprintf(&s, "\\%03d", c)
			}
		default:
			s.Write(b[i : i+size])
		}
		i += size
	}
	s.WriteByte('"')
	return s.String()
}
