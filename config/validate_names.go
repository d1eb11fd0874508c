package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Limits of DNS names (RFC 1035) and TTLs (RFC 2181).
const (
	maxLabelLen = 63
	maxNameWire = 255
	maxTTL      = 1<<31 - 1
)

// asciiLower lower-cases the ASCII letters of s and leaves every other byte alone, so that it
// never rewrites bytes a name may not hold anyway.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// absName returns name lower-cased with the final dot; the empty name stays empty.
func absName(name string) string {
	if name == "" {
		return ""
	}
	name = asciiLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

// ownerName resolves a record set's name against its zone's apex (absolute, lower-case, with
// the final dot): "@" is the apex, "www" is "www.<apex>", a name with the final dot is
// absolute. As in Route 53, a name that already ends with the zone's name is taken as
// absolute even without the final dot: "www.example.com" in zone example.com is not
// "www.example.com.example.com.".
func ownerName(name, apex string) string {
	lower := asciiLower(name)
	bare := strings.TrimSuffix(apex, ".")
	switch {
	case name == "@":
		return apex
	case strings.HasSuffix(name, "."):
		return lower
	case name == "":
		return ""
	case bare != "" && (lower == bare || strings.HasSuffix(lower, "."+bare)):
		return lower + "."
	}
	return lower + "." + apex
}

// inZone reports whether the absolute name lies at or below the absolute apex.
func inZone(name, apex string) bool {
	return name == apex || apex == "." || strings.HasSuffix(name, "."+apex)
}

// nameProblem says why name, absolute with the final dot, is not a valid domain name, or
// returns "". Labels hold letters, digits, '-' (not first or last) and '_' (as in _dmarc).
func nameProblem(name string) string {
	switch name {
	case "":
		return "empty name"
	case ".":
		return "the root name is not allowed here"
	}
	wire := 1
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if l == "" {
			return "empty label (two dots in a row, or a leading dot)"
		}
		if len(l) > maxLabelLen {
			return fmt.Sprintf("label %q is %d bytes long, at most %d", l, len(l), maxLabelLen)
		}
		if l == "*" {
			return "wildcard names are not supported"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Sprintf("label %q holds %q; use letters, digits, '-' and '_'", l, string(rune(c)))
			}
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Sprintf("label %q starts or ends with '-'", l)
		}
		wire += len(l) + 1
	}
	if wire > maxNameWire {
		return fmt.Sprintf("name is %d bytes long in wire form, at most %d", wire, maxNameWire)
	}
	return ""
}

// hostProblem says why host is neither an IP address nor a host name, or returns "".
func hostProblem(host string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return "an IPv6 zone (%...) is not supported"
		}
		return ""
	}
	if h, p, err := net.SplitHostPort(host); err == nil && h != "" && p != "" {
		return "holds a port; write the port on its own"
	}
	if p := nameProblem(absName(host)); p != "" {
		return "not an IP address or a valid host name: " + p
	}
	return ""
}

// targetAddrProblem says why host, when an IP address, can be no check's target whatever a
// checker's address policy allows: no single endpoint answers at it. Names are resolved by each
// checker at dial time and judged there.
func targetAddrProblem(host string) string {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	a = a.Unmap()
	switch {
	case a.IsUnspecified():
		return "is the unspecified address, not an endpoint"
	case a.IsMulticast():
		return "is a multicast address, not an endpoint"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "is the broadcast address, not an endpoint"
	case a.Is4() && a.As4()[0] == 0:
		return "is in 0.0.0.0/8 (\"this network\"), not an endpoint"
	}
	return ""
}

// hostPortProblem says why s is not "host" or "host:port", as an HTTP Host header holds it.
func hostPortProblem(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), ""
	}
	if p := hostProblem(host); p != "" {
		return p
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("port %q is not 1..65535", port)
		}
	}
	return ""
}

// canonicalValue returns a record's value in the one form that compares equal for equal data:
// addresses as netip writes them, names absolute and lower-case, MX as "PREF HOST". A value
// that does not parse is returned unchanged, for Validate to report.
func canonicalValue(t RecordType, v string) string {
	switch t {
	case TypeA, TypeAAAA:
		if a, err := netip.ParseAddr(v); err == nil && a.Zone() == "" {
			return a.String()
		}
	case TypeCNAME, TypeNS:
		return absName(v)
	case TypeMX:
		f := strings.Fields(v)
		if len(f) == 2 {
			if pref, err := strconv.ParseUint(f[0], 10, 16); err == nil {
				return strconv.FormatUint(pref, 10) + " " + absName(f[1])
			}
		}
	}
	return v
}

// valueProblem says why v is not a valid value for a record of type t, or returns "".
func valueProblem(t RecordType, v string) string {
	switch t {
	case TypeA:
		if a, err := netip.ParseAddr(v); err != nil || !a.Is4() {
			return fmt.Sprintf("must be an IPv4 address, got %q", v)
		}
	case TypeAAAA:
		if a, err := netip.ParseAddr(v); err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Sprintf("must be an IPv6 address, got %q", v)
		}
	case TypeCNAME, TypeNS:
		if p := nameProblem(absName(v)); p != "" {
			return fmt.Sprintf("must be a domain name, got %q: %s", v, p)
		}
	case TypeMX:
		f := strings.Fields(v)
		if len(f) != 2 {
			return fmt.Sprintf("must be \"PREFERENCE HOST\", e.g. \"10 mail.example.com.\", got %q", v)
		}
		if _, err := strconv.ParseUint(f[0], 10, 16); err != nil {
			return fmt.Sprintf("preference must be 0..65535, got %q", f[0])
		}
		if p := nameProblem(absName(f[1])); p != "" {
			return fmt.Sprintf("mail host must be a domain name, got %q: %s", f[1], p)
		}
	case TypeTXT:
		if len(v) > 255 {
			return fmt.Sprintf("must be at most 255 bytes, got %d", len(v))
		}
		for _, r := range v {
			if r < 0x20 || r == 0x7f {
				return fmt.Sprintf("holds the control character %q", r)
			}
		}
	}
	return ""
}
