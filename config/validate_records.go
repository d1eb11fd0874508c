package config

import (
	"fmt"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config/rdata"
	"github.com/vigil-dns/vigil/internal/safetext"
)

// maxMessage is the largest DNS message (over TCP): a record set must fit in one, with its
// header, question and OPT record, and the signatures of a signed zone.
const maxMessage = 65535

// signatureRoom returns the bytes that the DNSSEC signatures of a record set at owner take in
// a response: two RRSIG records (two keys sign during a key rollover), each a compressed
// owner, the record header, the fixed fields, the signer's name (the zone's apex, at most
// the owner) uncompressed, and an ECDSA P-256 signature. Every set keeps that room, signed
// zone or not yet: signing may be enabled later without refusing sets that exist.
func signatureRoom(owner string) int {
	const compressedOwner, header, fixed, signature = 2, 10, 18, 64
	return 2 * (compressedOwner + header + fixed + len(owner) + 1 + signature)
}

// validateRecords checks the records of one set at owner (absolute, or "" when unknown)
// against its type and routing policy.
func (v *validator) validateRecords(rs *RecordSet, rp, owner string, policy Policy, typeOK bool) {
	if rs.Alias != "" {
		if len(rs.Records) > 0 {
			v.add(join(rp, "records"), "an alias record set has no records of its own (it answers with its target's): remove records or alias")
		}
		return
	}
	if len(rs.Records) == 0 {
		v.add(join(rp, "records"), "at least one record is required")
		return
	}
	values := map[string]int{}
	primaries, secondaries, badRoles := 0, 0, 0
	nullMX, parsed := -1, 0
	wire := 12 + len(owner) + 1 + 4 + 11 // header, question, OPT record
	for k := range rs.Records {
		r := &rs.Records[k]
		p := join(rp, fmt.Sprintf("records[%d]", k))
		if typeOK {
			if rr, err := rdata.Parse(dns.Fqdn(owner), rrtype(rs.Type), 0, r.Value); err != nil {
				v.add(join(p, "value"), "%s", err)
			} else if err := safetext.Check(r.Value); err != nil {
				// What rdata takes but a terminal would act on: C1 controls, bidi overrides.
				v.add(join(p, "value"), "%v (in a TXT value, write such bytes as \\DDD escapes within quotes)", err)
			} else {
				parsed++
				wire += dns.Len(rr)
				key, err := rdata.Key(rrtype(rs.Type), r.Value)
				if err != nil {
					// What does not pack cannot be served: refused here rather than
					// answered SERVFAIL at every location.
					v.add(join(p, "value"), "%s", err)
				} else if first, dup := values[key]; dup {
					v.add(join(p, "value"), "duplicate value %q (also records[%d])", r.Value, first)
				} else {
					values[key] = k
				}
				if mx, ok := rr.(*dns.MX); ok && mx.Mx == "." {
					nullMX = k
				}
			}
		} else if r.Value == "" {
			v.add(join(p, "value"), "required")
		}
		v.validateHealth(r, p, policy)
		v.validateRegion(r, p, policy)
		switch {
		case policy != PolicyFailover && r.Role != "":
			v.add(join(p, "role"), "only failover record sets use role (this one is %s)", policy)
		case policy != PolicyFailover:
		case r.Role == RolePrimary:
			primaries++
		case r.Role == RoleSecondary:
			secondaries++
		case r.Role == "":
			v.add(join(p, "role"), "required in a failover record set: primary or secondary")
			badRoles++
		default:
			badRoles++
			v.add(join(p, "role"), "must be primary or secondary, got %q", r.Role)
		}
	}
	if nullMX >= 0 && len(rs.Records) > 1 {
		v.add(join(rp, fmt.Sprintf("records[%d]", nullMX)), "a null MX (0 .) says the domain takes no mail (RFC 7505): it must be the record set's only record, got %d records", len(rs.Records))
	}
	if room := signatureRoom(owner); parsed == len(rs.Records) && wire+room > maxMessage {
		v.add(join(rp, "records"), "the record set takes %d bytes in wire form, more than one DNS message holds (%d, less %d for its DNSSEC signatures): split it or shorten its records", wire, maxMessage, room)
	}
	if policy == PolicyFailover && badRoles == 0 {
		if primaries != 1 {
			v.add(join(rp, "records"), "a failover record set needs exactly one primary, got %d", primaries)
		}
		if secondaries > 1 {
			v.add(join(rp, "records"), "a failover record set has at most one secondary, got %d", secondaries)
		}
	}
}

// validateHealth checks a record's health check and weight against its set's policy.
func (v *validator) validateHealth(r *Record, p string, policy Policy) {
	if r.HealthCheck != "" {
		if !v.hasCheck(r.HealthCheck) {
			v.add(join(p, "health_check"), "no check has id %q", r.HealthCheck)
		} else if policy == PolicySimple {
			v.add(join(p, "health_check"), "a simple record set answers every record, healthy or not: use multivalue to answer only healthy records")
		}
	}
	switch {
	case policy == PolicyWeighted && r.Weight == nil:
		v.add(join(p, "weight"), "required in a weighted record set: 0..255")
	case policy == PolicyWeighted && (*r.Weight < 0 || *r.Weight > 255):
		v.add(join(p, "weight"), "must be 0..255, got %d", *r.Weight)
	case policy != PolicyWeighted && r.Weight != nil:
		v.add(join(p, "weight"), "only weighted record sets use weight (this one is %s)", policy)
	}
}

// validateRegion checks a record's region against its set's policy: a nearest record set
// names the region of each record, one of the document's; no other set names any.
func (v *validator) validateRegion(r *Record, p string, policy Policy) {
	switch {
	case policy == PolicyNearest && r.Region == "":
		v.add(join(p, "region"), "required in a nearest record set: the region of the record's endpoint")
	case policy == PolicyNearest && !v.regions[r.Region]:
		v.add(join(p, "region"), "unknown region %q (not in regions)", r.Region)
	case policy != PolicyNearest && r.Region != "":
		v.add(join(p, "region"), "only nearest record sets use region (this one is %s)", policy)
	}
}
