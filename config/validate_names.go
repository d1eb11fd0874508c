package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config/rdata"
)

// maxTTL is the largest TTL (RFC 2181 §8).
const maxTTL = 1<<31 - 1

// absName returns name lower-cased with the final dot; the empty name stays empty.
func absName(name string) string { return rdata.Fqdn(name) }

// OwnerName resolves a record set's name against its zone's apex, as normalising does; see
// ownerName.
func OwnerName(name, apex string) string { return ownerName(name, apex) }

// ownerName resolves a record set's name against its zone's apex (absolute, lower-case, with
// the final dot): "@" is the apex, "www" is "www.<apex>", a name with the final dot is
// absolute. As in Route 53, a name that already ends with the zone's name is taken as
// absolute even without the final dot: "www.example.com" in zone example.com is not
// "www.example.com.example.com.".
func ownerName(name, apex string) string {
	lower := rdata.Lower(name)
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
// returns "" (package rdata holds the rule, for record data too).
func nameProblem(name string) string { return rdata.NameProblem(name) }

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

// rrtype returns the DNS type code of t, or 0 when t names no type.
func rrtype(t RecordType) uint16 { return dns.StringToType[string(t)] }

// canonicalValue returns a record's value in the one form that compares equal for equal data
// (rdata.Canonical). A value that does not parse is returned unchanged, for Validate to
// report.
func canonicalValue(t RecordType, v string) string {
	if code := rrtype(t); code != 0 {
		return rdata.Canonical(code, v)
	}
	return v
}

// valueProblem says why v is not a valid value for a record of type t, or returns "": the
// words of rdata.Parse, the one parser of record data.
func valueProblem(t RecordType, v string) string {
	if _, err := rdata.Parse(".", rrtype(t), 0, v); err != nil {
		return err.Error()
	}
	return ""
}
