// Package netkey maps a client's address to its network, the unit of Vigil's per-source
// limits. A network is a /24 for IPv4 and a /56 for IPv6, as in response rate limiting in BIND
// and NSD. Keyed by single address, a limit falls to whoever holds a few addresses: one IPv6
// host is given a /64 or more, and on Linux every address of 127.0.0.0/8 is a source of its
// own, so that 8 to 16 addresses of one machine took every slot of a listener. Keyed by
// network, the addresses of one /24 or /56 share one allowance.
package netkey

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
)

// The prefix lengths of a network key.
const (
	// V4Bits is the prefix length of an IPv4 network.
	V4Bits = 24
	// V6Bits is the prefix length of an IPv6 network.
	V6Bits = 56
)

// Key is a client network: the family in the top two bits (1 IPv4, 2 IPv6, 3 unknown) and
// the network's prefix in the low bits. Two addresses have the same Key exactly when they
// are in the same /24 (IPv4, IPv4-mapped IPv6 included) or the same /56 (IPv6); the zone of
// an IPv6 address is ignored. The zero Key is no network: Of never returns it, so that a
// table may use 0 as an empty slot.
type Key uint64

// unknown is the key of every address that is not one (an empty or malformed address):
// they share one allowance.
const unknown Key = 3 << 62

// Of returns the network of addr.
func Of(addr netip.Addr) Key {
	if !addr.IsValid() {
		return unknown
	}
	addr = addr.Unmap()
	if addr.Is4() {
		b := addr.As4()
		return 1<<62 | Key(b[0])<<16 | Key(b[1])<<8 | Key(b[2])
	}
	b := addr.As16()
	return 2<<62 | Key(binary.BigEndian.Uint64(b[:8])>>(64-V6Bits))
}

// OfAddr returns the network of a remote address as a listener reports it: a *net.TCPAddr
// or *net.UDPAddr, or any net.Addr whose String is host:port or a bare IP address (with a
// zone or without). Anything else is the one unknown network.
func OfAddr(a net.Addr) Key {
	switch a := a.(type) {
	case nil:
		return unknown
	case *net.TCPAddr:
		if a == nil {
			return unknown
		}
		ip, _ := netip.AddrFromSlice(a.IP)
		return Of(ip)
	case *net.UDPAddr:
		if a == nil {
			return unknown
		}
		ip, _ := netip.AddrFromSlice(a.IP)
		return Of(ip)
	}
	return OfString(a.String())
}

// OfString returns the network of "host:port" or of a bare address; a host that is not an
// IP address is the one unknown network.
func OfString(s string) Key {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return Of(ap.Addr())
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return unknown
	}
	return Of(ip)
}

// Prefix returns the network as a prefix, e.g. 192.0.2.0/24 or 2001:db8:0:100::/56; the
// unknown network is the invalid prefix.
func (k Key) Prefix() netip.Prefix {
	switch k >> 62 {
	case 1:
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(k >> 16), byte(k >> 8), byte(k)}), V4Bits)
	case 2:
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], uint64(k&(1<<62-1))<<(64-V6Bits))
		return netip.PrefixFrom(netip.AddrFrom16(b), V6Bits)
	}
	return netip.Prefix{}
}

// String returns the network in prefix notation, or "unknown".
func (k Key) String() string {
	if p := k.Prefix(); p.IsValid() {
		return p.String()
	}
	if k == unknown {
		return "unknown"
	}
	return fmt.Sprintf("netkey(%#x)", uint64(k))
}
