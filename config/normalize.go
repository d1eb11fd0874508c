package config

import (
	"slices"
	"strings"
)

// normalize applies the defaults that depend on other fields, and writes names and values in
// their one canonical form, so that the rest of Vigil reads a document one way:
//
//   - zone names, name servers, SOA names and record-set names become absolute lower-case
//     names with the final dot ("www" in zone demo.vigil.test is "www.demo.vigil.test.", "@"
//     is the apex), an alias's target too; domain names in record values (CNAME, NS, PTR,
//     MX, SRV) too, A and AAAA values as netip writes them (rdata.Canonical); TXT and CAA
//     values stay as written;
//   - a record set's policy "" becomes simple; a TTL left out stays so (the zone's TTL, at
//     the location);
//   - a probed check's empty regions become every region of the document, its port 0 becomes
//     80 for http, 443 for https and 53 for dns, its method is upper-cased; a dns check's
//     name becomes absolute, its type and rcode upper-case with defaults A and NOERROR, its
//     transport lower-case with default udp, its expected answer canonical;
//   - a calculated check's min_healthy 0 becomes its number of children (AND);
//   - the SOA's rname defaults to hostmaster.<zone>, its mname to the zone's first explicit
//     name server (left empty when the zone has none: the DNS location fills it from the
//     zone's name-server shard).
//
// It never fails: what it cannot make sense of it leaves for Validate to report. Normalising
// twice changes nothing more than normalising once.
func (d *Document) normalize() {
	d.NameServers.Domain = absName(d.NameServers.Domain)
	d.Notifications.normalize()
	for i := range d.Checks {
		d.Checks[i].normalize(d.Regions)
	}
	for i := range d.Zones {
		d.Zones[i].normalize()
	}
}

// normalize applies a check's defaults that depend on its protocol and the document.
func (c *Check) normalize(regions []string) {
	switch c.Protocol {
	case ProtocolCalculated:
		if c.MinHealthy == 0 {
			c.MinHealthy = len(c.Children)
		}
		return
	case ProtocolHTTP, ProtocolHTTPS, ProtocolTCP, ProtocolGRPC, ProtocolDNS:
		if len(c.Regions) == 0 {
			c.Regions = slices.Clone(regions)
		}
		if c.Target.Port == 0 {
			c.Target.Port = defaultPort(c.Protocol)
		}
	}
	c.Method = strings.ToUpper(c.Method)
	if d := c.DNS; d != nil {
		d.Name = absName(d.Name)
		d.Type = RecordType(strings.ToUpper(string(d.Type)))
		if d.Type == "" {
			d.Type = TypeA
		}
		d.Rcode = strings.ToUpper(d.Rcode)
		if d.Rcode == "" {
			d.Rcode = "NOERROR"
		}
		d.Transport = strings.ToLower(d.Transport)
		if d.Transport == "" {
			d.Transport = "udp"
		}
		if d.Answer != "" {
			d.Answer = canonicalValue(d.Type, d.Answer)
		}
	}
}

// normalize makes a zone's names absolute and applies the defaults that depend on the zone.
func (z *Zone) normalize() {
	apex := absName(z.Name)
	z.Name = apex
	for i, ns := range z.NameServers {
		z.NameServers[i] = absName(ns)
	}
	for i := range z.RecordSets {
		rs := &z.RecordSets[i]
		if apex != "" {
			rs.Name = ownerName(rs.Name, apex)
		}
		if apex != "" && rs.Alias != "" {
			rs.Alias = ownerName(rs.Alias, apex)
		}
		if rs.Policy == "" {
			rs.Policy = PolicySimple
		}
		for j := range rs.Records {
			rs.Records[j].Value = canonicalValue(rs.Type, rs.Records[j].Value)
		}
		if rs.Fallback != "" {
			rs.Fallback = canonicalValue(rs.Type, rs.Fallback)
		}
	}
	z.SOA.MName = absName(z.SOA.MName)
	if z.SOA.MName == "" {
		z.SOA.MName = z.firstNameServer()
	}
	z.SOA.RName = absName(z.SOA.RName)
	if z.SOA.RName == "" && apex != "" && nameProblem(apex) == "" {
		z.SOA.RName = "hostmaster." + apex
	}
}

// firstNameServer is the zone's first explicit name server: from its name_servers, or else
// from an NS record set at its apex; "" when it has none, or when that name is invalid (the
// problem is reported where it was written).
func (z *Zone) firstNameServer() string {
	ns := ""
	if len(z.NameServers) > 0 {
		ns = z.NameServers[0]
	} else if rs, ok := z.RecordSet(z.Name, TypeNS); ok && z.Name != "" && len(rs.Records) > 0 {
		ns = rs.Records[0].Value
	}
	if nameProblem(ns) != "" {
		return ""
	}
	return ns
}
