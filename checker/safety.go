package checker

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// AddressPolicy decides which addresses a checker may connect to. By default only public
// unicast addresses are allowed: loopback, private, link-local, CGNAT, multicast,
// documentation and the other special-purpose ranges of IANA's registries are refused, for
// IPv4, IPv6 and IPv4 addresses embedded in IPv6 (mapped, compatible, translated, NAT64,
// 6to4), which are judged by the IPv4 address inside. An IPv6 address outside 2000::/3, the
// only range IANA allocates as global unicast, is refused (except NAT64's 64:ff9b::/96 with
// a public IPv4 address inside). The policy is
// applied to the exact address being dialled, after name resolution, so DNS rebinding and
// redirects cannot get around it.
type AddressPolicy struct {
	// Allow lists prefixes the operator permits even though they are reserved, e.g. a
	// private network the checker is meant to watch.
	Allow []netip.Prefix
	// AllowLoopback permits 127.0.0.0/8 and ::1 (dev mode and tests).
	AllowLoopback bool
}

// AddressError is returned when an address is refused by an AddressPolicy.
type AddressError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Range names the reserved range it is in, e.g. "private".
	Range string
}

// Error says which address was refused and why.
func (e *AddressError) Error() string {
	return fmt.Sprintf("checker: address %s refused: %s range (not in the allow-list)", e.Addr, e.Range)
}

// reservedRange is one special-purpose range and its name.
type reservedRange struct {
	prefix netip.Prefix
	name   string
}

// reservedRanges returns the special-purpose ranges, most specific first. It is a function,
// not a package variable, so that no caller can change the list.
func reservedRanges() []reservedRange {
	r := func(s, name string) reservedRange { return reservedRange{netip.MustParsePrefix(s), name} }
	return []reservedRange{
		r("0.0.0.0/8", "this-network"),
		r("10.0.0.0/8", "private"),
		r("100.64.0.0/10", "cgnat"),
		r("127.0.0.0/8", "loopback"),
		r("169.254.0.0/16", "link-local"),
		r("172.16.0.0/12", "private"),
		r("192.0.0.0/24", "ietf-protocol"),
		r("192.0.2.0/24", "documentation"),
		r("192.31.196.0/24", "as112"),
		r("192.52.193.0/24", "amt"),
		r("192.88.99.0/24", "6to4-relay"),
		r("192.168.0.0/16", "private"),
		r("192.175.48.0/24", "as112"),
		r("198.18.0.0/15", "benchmarking"),
		r("198.51.100.0/24", "documentation"),
		r("203.0.113.0/24", "documentation"),
		r("224.0.0.0/4", "multicast"),
		r("240.0.0.0/4", "reserved"),
		r("::/128", "unspecified"),
		r("::1/128", "loopback"),
		r("64:ff9b:1::/48", "nat64-local"),
		r("100::/64", "discard"),
		r("2001::/23", "ietf-protocol"),
		r("2001:db8::/32", "documentation"),
		r("2620:4f:8000::/48", "as112"),
		r("3fff::/20", "documentation"),
		r("5f00::/16", "srv6"),
		r("fc00::/7", "unique-local"),
		r("fe80::/10", "link-local"),
		r("fec0::/10", "site-local"),
		r("ff00::/8", "multicast"),
	}
}

// Check returns nil when addr may be dialled, or an *AddressError naming its reserved range.
func (p AddressPolicy) Check(addr netip.Addr) error { return newGuard(p).check(addr) }

// guard is an AddressPolicy with its range table built once.
type guard struct {
	policy   AddressPolicy
	reserved []reservedRange
}

func newGuard(p AddressPolicy) *guard { return &guard{policy: p, reserved: reservedRanges()} }

// check applies the policy to addr.
func (g *guard) check(addr netip.Addr) error {
	if !addr.IsValid() {
		return &AddressError{Addr: addr, Range: "invalid"}
	}
	addr = addr.WithZone("")
	if g.allowed(addr) {
		return nil
	}
	if name := g.reservedName(addr); name != "" {
		if name == "loopback" && g.policy.AllowLoopback {
			return nil
		}
		return &AddressError{Addr: addr, Range: name}
	}
	// IPv4 embedded in IPv6 must itself be allowed.
	inner, embedded := embeddedIPv4(addr)
	if embedded {
		if g.allowed(inner) {
			return nil
		}
		if name := g.reservedName(inner); name != "" && !(name == "loopback" && g.policy.AllowLoopback) {
			return &AddressError{Addr: addr, Range: name + " (embedded IPv4)"}
		}
	}
	if addr.Is6() && !addr.Is4In6() && !globalUnicast().Contains(addr) && !nat64WellKnown().Contains(addr) {
		// Unassigned or reserved by IETF (IANA's IPv6 address space registry), including
		// the deprecated IPv4-compatible and IPv4-translated forms.
		return &AddressError{Addr: addr, Range: "reserved (outside global unicast 2000::/3)"}
	}
	return nil
}

// globalUnicast returns 2000::/3, the only IPv6 range IANA allocates for global unicast.
func globalUnicast() netip.Prefix { return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20}), 3) }

// nat64WellKnown returns NAT64's well-known prefix 64:ff9b::/96 (RFC 6052), which embeds an
// IPv4 address.
func nat64WellKnown() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x00, 0x64, 0xff, 0x9b}), 96)
}

// allowed reports whether addr, or the IPv4 address it maps, is in the allow-list.
func (g *guard) allowed(addr netip.Addr) bool {
	un := addr.Unmap()
	for _, pre := range g.policy.Allow {
		if pre.Contains(addr) || pre.Contains(un) {
			return true
		}
	}
	return false
}

// reservedName returns the name of the reserved range that addr (unmapped) is in, or "".
func (g *guard) reservedName(addr netip.Addr) string {
	un := addr.Unmap()
	for _, r := range g.reserved {
		if r.prefix.Contains(un) {
			return r.name
		}
	}
	return ""
}

// embeddedIPv4 returns the IPv4 address inside a NAT64 (64:ff9b::/96), 6to4 (2002::/16),
// IPv4-compatible (::/96, deprecated) or IPv4-translated (::ffff:0:0:0/96, SIIT) address.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	if !addr.Is6() || addr.Is4In6() {
		return netip.Addr{}, false
	}
	b := addr.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	zero := func(bs []byte) bool {
		for _, x := range bs {
			if x != 0 {
				return false
			}
		}
		return true
	}
	nat64 := b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(b[4:12])
	compatible := zero(b[:12])
	translated := zero(b[:8]) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0
	switch {
	case nat64, compatible, translated:
		return last, true
	case b[0] == 0x20 && b[1] == 0x02:
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// control returns a net.Dialer Control function that applies the policy to the address the
// kernel is about to connect to: the last line of defence, whatever resolved the name.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("checker: dial control: %w", err)
	}
	return g.check(ap.Addr())
}

// isAddressError reports whether err comes from an AddressPolicy.
func isAddressError(err error) bool {
	var ae *AddressError
	return errors.As(err, &ae)
}
