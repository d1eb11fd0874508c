package location

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// maxValue bounds the length of one record value, so that a hostile configuration cannot make
// the parser work on megabytes.
const maxValue = 4096

// buildRR returns the resource record of one record value in presentation form. Relative
// domain names in the value are relative to the zone apex.
func buildRR(name string, rtype uint16, ttl uint32, value, apex string) (dns.RR, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, errors.New("empty value")
	}
	if len(value) > maxValue {
		return nil, fmt.Errorf("value longer than %d bytes", maxValue)
	}
	h := hdr(name, rtype, ttl)
	switch rtype {
	case dns.TypeA, dns.TypeAAAA:
		addr, err := netip.ParseAddr(value)
		if err != nil || addr.Zone() != "" {
			return nil, fmt.Errorf("%q is not an IP address", value)
		}
		if rtype == dns.TypeA && !addr.Is4() && !addr.Is4In6() {
			return nil, fmt.Errorf("%q is not an IPv4 address", value)
		}
		if rtype == dns.TypeAAAA && (!addr.Is6() || addr.Is4In6()) {
			return nil, fmt.Errorf("%q is not an IPv6 address", value)
		}
		return addrRR(name, addr, ttl), nil
	case dns.TypeCNAME, dns.TypeNS:
		target, err := domain(value, apex)
		if err != nil {
			return nil, err
		}
		if rtype == dns.TypeCNAME {
			return &dns.CNAME{Hdr: h, Target: target}, nil
		}
		return &dns.NS{Hdr: h, Ns: target}, nil
	case dns.TypeMX:
		pref, host, ok := strings.Cut(value, " ")
		p, err := strconv.ParseUint(strings.TrimSpace(pref), 10, 16)
		if !ok || err != nil {
			return nil, fmt.Errorf("%q is not \"<preference> <host>\"", value)
		}
		target, err := domain(host, apex)
		if err != nil {
			return nil, err
		}
		return &dns.MX{Hdr: h, Preference: uint16(p), Mx: target}, nil
	case dns.TypeTXT:
		return buildTXT(h, value)
	}
	return nil, fmt.Errorf("type %s is not served", dns.TypeToString[rtype])
}

// domain returns the absolute lower-case form of a domain name in a record value; a name
// without the final dot is relative to apex, and "@" is the apex.
func domain(value, apex string) (string, error) {
	name := owner(value, apex)
	if _, ok := dns.IsDomainName(name); !ok || strings.ContainsAny(name, " \t\\\"") {
		return "", fmt.Errorf("%q is not a domain name", value)
	}
	return name, nil
}

// buildTXT parses a TXT value: either one unquoted string, taken as it is, or one or more
// quoted strings as in a zone file ("a" "b").
func buildTXT(h dns.RR_Header, value string) (dns.RR, error) {
	if !strings.HasPrefix(value, `"`) {
		return &dns.TXT{Hdr: h, Txt: splitTXT(value)}, nil
	}
	rr, err := dns.NewRR(". 0 IN TXT " + value)
	if err != nil || rr == nil {
		return nil, fmt.Errorf("%q is not a TXT value: %w", value, err)
	}
	txt := rr.(*dns.TXT)
	txt.Hdr = h
	return txt, nil
}

// splitTXT cuts an unquoted value into the 255-byte character strings of a TXT record.
// Backslashes and quotes are escaped, since the library keeps TXT strings in presentation form.
func splitTXT(value string) []string {
	var out []string
	for len(value) > 0 {
		n := min(len(value), 255)
		out = append(out, escapeTXT(value[:n]))
		value = value[n:]
	}
	return out
}

// escapeTXT escapes the characters miekg/dns reads as escapes in a TXT string.
func escapeTXT(s string) string {
	if !strings.ContainsAny(s, `\"`) {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
