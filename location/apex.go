package location

import (
	"fmt"
	"net/netip"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
)

// setNameServers sets z's NS records and glue: those of the apex NS record set when cz has
// one, else of the shard, else of cz's name_servers.
func (z *zone) setNameServers(cz *config.Zone, sets []*config.RecordSet, shard []NameServer) error {
	apex := z.name
	nss := shard
	if len(nss) == 0 {
		for _, n := range cz.NameServers {
			nss = append(nss, NameServer{Index: -1, Name: n})
		}
	}
	own, err := apexNS(sets, cz.TTL, apex)
	if err != nil {
		return z.fail("%w", err)
	}
	if len(nss) == 0 && own == nil {
		return z.fail("no name servers: neither a shard, nor name_servers, nor an NS record set at the apex")
	}
	for _, ns := range nss {
		name := canonical(ns.Name)
		if _, ok := dns.IsDomainName(name); !ok {
			return z.fail("name server %q: not a domain name", ns.Name)
		}
		if ns.Index >= 0 {
			z.shard[ns.Index] = true
		}
		z.ns = append(z.ns, &dns.NS{Hdr: hdr(apex, dns.TypeNS, nsTTL), Ns: name})
		if ns.Addr.IsValid() && dns.IsSubDomain(apex, name) {
			z.glue = append(z.glue, addrRR(name, ns.Addr, nsTTL))
		}
	}
	if own != nil {
		z.ns = own
	}
	return nil
}

// addApexSets adds the SOA and NS record sets at the apex, and the A and AAAA sets of the
// glue names in the zone, which answer their own queries too.
func (z *zone) addApexSets() {
	apex := z.name
	apexNode := z.node(apex)
	apexNode.sets = append(apexNode.sets,
		&rrset{rtype: dns.TypeSOA, rrs: []dns.RR{z.soa}, in: z,
			cfg: &config.RecordSet{Name: apex, Type: "SOA", Records: []config.Record{{Value: z.soa.String()}}}},
		z.nsSet())
	// Glue names in the zone answer their own A and AAAA queries too.
	for _, g := range z.glue {
		n := z.node(g.Header().Name)
		if t := g.Header().Rrtype; n.find(t) == nil {
			n.sets = append(n.sets, &rrset{rtype: t, rrs: []dns.RR{g}, in: z,
				cfg: &config.RecordSet{Name: g.Header().Name, Records: []config.Record{{}}}})
		}
	}
}

// nsTTL is the TTL of the NS records and glue, as the parent zone would publish them.
const nsTTL = 172800

// nsSet returns the apex NS record set built from the zone's name servers.
func (z *zone) nsSet() *rrset {
	apex, ns := z.name, z.ns
	recs := make([]config.Record, len(ns))
	for i, rr := range ns {
		recs[i] = config.Record{Value: rr.(*dns.NS).Ns}
	}
	return &rrset{rtype: dns.TypeNS, rrs: ns, in: z,
		cfg: &config.RecordSet{Name: apex, Type: config.TypeNS, Records: recs}}
}

// buildSOA returns the zone's SOA record with defaults for the names the zone leaves empty.
func buildSOA(cz *config.Zone, apex, firstNS string) *dns.SOA {
	s := cz.SOA
	d := config.DefaultSOA()
	mname, rname := firstNS, "hostmaster."+apex
	if s.MName != "" {
		mname = rdata.Fqdn(s.MName)
	}
	if s.RName != "" {
		rname = rdata.Fqdn(s.RName)
	}
	ttl := s.TTL
	if ttl == 0 {
		ttl = d.TTL
	}
	return &dns.SOA{Hdr: hdr(apex, dns.TypeSOA, ttl), Ns: mname, Mbox: rname, Serial: s.Serial,
		Refresh: s.Refresh, Retry: s.Retry, Expire: s.Expire, Minttl: s.Minimum}
}

// hdr returns a resource record header of class IN.
func hdr(name string, t uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
}

// addrRR returns the A or AAAA record of name for addr.
func addrRR(name string, addr netip.Addr, ttl uint32) dns.RR {
	addr = addr.Unmap()
	if addr.Is4() {
		return &dns.A{Hdr: hdr(name, dns.TypeA, ttl), A: addr.AsSlice()}
	}
	return &dns.AAAA{Hdr: hdr(name, dns.TypeAAAA, ttl), AAAA: addr.AsSlice()}
}

// ShardNameServers returns the name servers of a shard of virtual name servers: for each
// index, the name "ns-<index>.<domain>" (as config.NameServerSettings names them) and, when
// addrs holds one, its address.
func ShardNameServers(indices []int, domain string, addrs map[int]netip.Addr) []NameServer {
	domain = canonical(domain)
	out := make([]NameServer, 0, len(indices))
	for _, i := range indices {
		out = append(out, NameServer{Index: i, Name: fmt.Sprintf("ns-%d.%s", i, domain), Addr: addrs[i]})
	}
	return out
}
