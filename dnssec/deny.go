package dnssec

import (
	"slices"

	"github.com/miekg/dns"
)

// NextName returns the immediate successor of name in canonical order, "\000.<name>": the
// next name of a black-lie NSEC record, which covers nothing but name itself.
func NextName(name string) string { return `\000.` + name }

// NoData returns the NSEC record that proves name exists without the asked type: owned by
// name, covering nothing beyond it, listing types (the name's own) with NSEC and RRSIG.
func NoData(name string, types []uint16, ttl uint32) *dns.NSEC {
	bitmap := append(slices.Clone(types), dns.TypeNSEC, dns.TypeRRSIG)
	slices.Sort(bitmap)
	bitmap = slices.Compact(bitmap)
	return &dns.NSEC{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: ttl},
		NextDomain: NextName(name), TypeBitMap: bitmap}
}

// NoName returns the black-lie NSEC record of a name that does not exist (RFC 9824): owned
// by name, listing only NSEC, RRSIG and NXNAME. The answer's rcode is NOERROR.
func NoName(name string, ttl uint32) *dns.NSEC {
	return &dns.NSEC{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: ttl},
		NextDomain: NextName(name), TypeBitMap: []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}}
}

// Link returns the NSEC record at name of a zone's NSEC chain (RFC 4035 §2.3): next is the
// following name of the zone in canonical order (the apex after the last), types the name's
// own, with NSEC and RRSIG.
func Link(name, next string, types []uint16, ttl uint32) *dns.NSEC {
	nsec := NoData(name, types, ttl)
	nsec.NextDomain = next
	return nsec
}
