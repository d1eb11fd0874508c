package location

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
)

// The zones of the validator differential: a signed parent (split keys, for a ZSK rollover),
// a signed child hosted beside it (a CSK, for a CSK rollover, its DS in the parent) and an
// unsigned child hosted beside it (a delegation without DS: provably insecure).
const (
	vdParent = "vd.test."
	vdChild  = "sc.vd.test."
	vdPlain  = "uc.vd.test."
)

// vdMissingType is the type no name of the corpus holds.
const vdMissingType = dns.TypeSSHFP

// vdTypes are the types asked of every name.
var vdTypes = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeCAA, dns.TypeSRV, dns.TypeMX,
	dns.TypeNS, dns.TypeDS, dns.TypeDNSKEY, vdMissingType}

// vdName is one owner name of the corpus and what kind of data it holds, for the report.
type vdName struct {
	name string
	// kind groups names for the counts: "policy", "alias", "wildcard", "delegation", ...
	kind string
	// insecure says the name's answers are provably insecure (in the unsigned child).
	insecure bool
	// onlyDS says only the DS type is asked: a delegation to servers that do not exist, whose
	// other types a resolver would look for below the cut.
	onlyDS bool
}

// vdQuestion is one question of the corpus.
type vdQuestion struct {
	vdName
	qtype uint16
}

func (q vdQuestion) String() string { return q.name + " " + dns.TypeToString[q.qtype] }

// vdPolicySet is a health-aware record set, with what it answers when nothing is healthy.
type vdPolicySet struct {
	owner     string
	qtype     uint16
	noHealthy config.NoHealthy
	fallback  string
	checks    []string
	// primary holds the checks flipped down in the failover phase: a failover set's primary,
	// half of another set's records.
	primary []string
}

// vdCorpus is a generated set of zones and the questions asked of them.
type vdCorpus struct {
	seed     uint64
	parent   config.Zone
	child    config.Zone
	plain    config.Zone
	names    []vdName
	policies []vdPolicySet
	// childDS is the DS value(s) of the child written in the parent (the rollover changes them).
	childDS []string
	// parentDenial and childDenial are the signed zones' denial modes (config.DenialCompact
	// or config.DenialNSEC): one of each, which by the seed.
	parentDenial, childDenial string
}

// zones returns the corpus' zones with the child's DS set to ds (values as a DS record set's).
func (c *vdCorpus) zones(ds ...string) []config.Zone {
	p := c.parent
	p.RecordSets = slices.Clone(p.RecordSets)
	recs := make([]config.Record, len(ds))
	for i, v := range ds {
		recs[i].Value = v
	}
	p.RecordSets = append(p.RecordSets, config.RecordSet{Name: "sc", Type: config.TypeDS, Records: recs})
	return []config.Zone{p, c.child, c.plain}
}

// questions returns every question of the corpus: each name by each type (a DS-only name by DS).
func (c *vdCorpus) questions() []vdQuestion {
	var out []vdQuestion
	for _, n := range c.names {
		for _, qt := range vdTypes {
			if n.onlyDS && qt != dns.TypeDS {
				continue
			}
			// The trust anchor's own DS lives above it, where the resolvers have no server.
			if qt == dns.TypeDS && n.name == vdParent {
				continue
			}
			q := vdQuestion{vdName: n, qtype: qt}
			if qt == dns.TypeDS && n.name == vdPlain {
				q.insecure = false // the parent's signed denial that it has a DS
			}
			out = append(out, q)
		}
	}
	return out
}

// checks returns every health check id of the corpus.
func (c *vdCorpus) checks() []string {
	var out []string
	for _, p := range c.policies {
		out = append(out, p.checks...)
	}
	return out
}

// vdZone is a zone of apex with TTLs of one second (answers expire from the resolvers'
// caches at once when a verdict flips) and ns1 of the parent as its name server.
func vdZone(apex string) config.Zone {
	z := config.DefaultZone()
	z.Name = apex
	z.TTL = 1
	z.SOA.TTL, z.SOA.Minimum = 1, 1
	z.NameServers = []string{"ns1." + vdParent}
	return z
}

// vdLabel returns a label of prefix and a few seeded letters, so that names (and so the
// order of the NSEC chain a black lie stands in for) change with the seed.
func vdLabel(r *rand.Rand, prefix string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte(prefix + "-")
	for range 3 {
		b = append(b, letters[r.IntN(len(letters))])
	}
	return string(b)
}

// newVDCorpus generates the corpus of seed: the same seed, the same zones and questions. The
// parent proves denials with parentDenial (config.DenialCompact or config.DenialNSEC), the
// signed child with the other mode.
func newVDCorpus(seed uint64, childDS, parentDenial string) *vdCorpus {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	c := &vdCorpus{seed: seed, parent: vdZone(vdParent), child: vdZone(vdChild), plain: vdZone(vdPlain), childDS: []string{childDS},
		parentDenial: parentDenial, childDenial: config.DenialNSEC}
	if parentDenial == config.DenialNSEC {
		c.childDenial = config.DenialCompact
	}
	c.parent.DNSSEC = &config.DNSSEC{Enabled: true, Keys: "split", Denial: c.parentDenial}
	c.child.DNSSEC = &config.DNSSEC{Enabled: true, Denial: c.childDenial}
	// Addresses are drawn without repeats, so that no record set gets one value twice (which
	// the configuration refuses); a corpus uses far fewer than the 250 IPv4 values.
	used := map[string]bool{}
	unique := func(draw func() string) string {
		for range 10000 {
			if v := draw(); !used[v] {
				used[v] = true
				return v
			}
		}
		panic("validator differential: the corpus ran out of distinct addresses")
	}
	ip4 := func() string { return unique(func() string { return fmt.Sprintf("192.0.2.%d", 1+r.IntN(250)) }) }
	ip6 := func() string { return unique(func() string { return fmt.Sprintf("2001:db8::%x", 1+r.IntN(0xfffe)) }) }
	// Labels too: two record sets drawn at one owner and type would be one set twice.
	label := func(prefix string) string { return unique(func() string { return vdLabel(r, prefix) }) }
	add := func(z *config.Zone, rs config.RecordSet) { z.RecordSets = append(z.RecordSets, rs) }
	name := func(z *config.Zone, owner, kind string) {
		abs := z.Name
		if owner != "@" {
			abs = owner + "." + z.Name
		}
		c.names = append(c.names, vdName{name: abs, kind: kind, insecure: z.Name == vdPlain})
	}
	simple := func(t config.RecordType, vals ...string) config.RecordSet {
		rs := config.RecordSet{Type: t}
		for _, v := range vals {
			rs.Records = append(rs.Records, config.Record{Value: v})
		}
		return rs
	}
	at := func(owner string, rs config.RecordSet) config.RecordSet { rs.Name = owner; return rs }

	// policySet adds a health-aware set of policy p at owner in z, its records checked by
	// checks of their own.
	checkN := 0
	policySet := func(z *config.Zone, owner string, t config.RecordType, p config.Policy, nh config.NoHealthy) {
		rs := config.RecordSet{Name: owner, Type: t, Policy: p, NoHealthy: nh}
		if nh == config.NoHealthyAll {
			rs.NoHealthy = "" // the default, as most configurations write it
		}
		value := ip4
		if t == config.TypeAAAA {
			value = ip6
		}
		n := 2 + r.IntN(3)
		ps := vdPolicySet{owner: owner + "." + z.Name, qtype: dns.StringToType[string(t)], noHealthy: nh}
		for i := range n {
			checkN++
			id := fmt.Sprintf("vd-%d", checkN)
			rec := config.Record{Value: value(), HealthCheck: id}
			switch p {
			case config.PolicyFailover:
				rec.Role = config.RolePrimary
				if i > 0 {
					rec.Role = config.RoleSecondary
				}
			case config.PolicyWeighted:
				w := 1 + r.IntN(100)
				rec.Weight = &w
			case config.PolicyNearest:
				rec.Region = []string{"r1", "r2"}[i%2]
			}
			if (p == config.PolicyFailover || p == config.PolicyNearest) && i > 1 {
				break // one record per role or region
			}
			rs.Records = append(rs.Records, rec)
			ps.checks = append(ps.checks, id)
			if i%2 == 0 {
				ps.primary = append(ps.primary, id)
			}
		}
		if nh == config.NoHealthyFallback {
			rs.Fallback = value()
			ps.fallback = rs.Fallback
		}
		add(z, rs)
		c.policies = append(c.policies, ps)
	}

	p := &c.parent
	add(p, at("ns1", simple(config.TypeA, "127.0.0.1")))
	name(p, "@", "apex")
	name(p, "ns1", "simple")
	add(p, at("@", simple(config.TypeMX, fmt.Sprintf("%d mail.%s", r.IntN(50), vdParent))))
	add(p, at("@", simple(config.TypeTXT, `"v=spf1 -all"`)))
	add(p, at("@", simple(config.TypeCAA, `0 issue "ca.example.net"`, `128 tbs "critical"`)))
	add(p, at("@", simple(config.TypeA, ip4())))
	add(p, at("www", simple(config.TypeA, ip4())))
	add(p, at("www", simple(config.TypeAAAA, ip6())))
	name(p, "www", "simple")

	// Every policy with every no_healthy choice, at an A and an AAAA set of one name.
	policies := []config.Policy{config.PolicyFailover, config.PolicyWeighted, config.PolicyMultivalue, config.PolicyNearest}
	var targets []string
	for _, pol := range policies {
		for _, nh := range []config.NoHealthy{config.NoHealthyAll, config.NoHealthyNoData, config.NoHealthyFallback} {
			if pol == config.PolicyNearest && nh != config.NoHealthyAll {
				// A nearest set answers its nearest region's records when none is healthy
				// whatever its no_healthy says (routing.SelectNearest's last resort): not
				// what this corpus checks.
				continue
			}
			owner := label(string(pol[:2]) + "-" + string(nh[:2]))
			policySet(p, owner, config.TypeA, pol, nh)
			policySet(p, owner, config.TypeAAAA, pol, nh)
			if r.IntN(2) == 0 {
				add(p, at(owner, simple(config.TypeTXT, `"beside a policy set"`)))
			}
			name(p, owner, "policy")
			targets = append(targets, owner)
		}
	}
	// Aliases: to a policy set of each no_healthy choice (an alias to a nodata set answers no
	// data), at A and AAAA, and to a simple set.
	for i, tgt := range targets {
		if i%2 == 1 {
			continue
		}
		owner := label("al")
		add(p, config.RecordSet{Name: owner, Type: config.TypeA, Alias: tgt})
		add(p, config.RecordSet{Name: owner, Type: config.TypeAAAA, Alias: tgt})
		name(p, owner, "alias")
	}
	add(p, config.RecordSet{Name: "al-www", Type: config.TypeA, Alias: "www"})
	name(p, "al-www", "alias")
	add(p, config.RecordSet{Name: "al-apex", Type: config.TypeA, Alias: "@"})
	name(p, "al-apex", "alias")
	// CNAMEs: in the zone, a chain, into the signed child, into the unsigned child.
	add(p, at("cn", simple(config.TypeCNAME, "www."+vdParent)))
	name(p, "cn", "cname")
	add(p, at("cn2", simple(config.TypeCNAME, "cn."+vdParent)))
	name(p, "cn2", "cname")
	add(p, at("cn-child", simple(config.TypeCNAME, "www."+vdChild)))
	name(p, "cn-child", "cname")
	add(p, at("cn-fo", simple(config.TypeCNAME, targets[0]+"."+vdParent)))
	name(p, "cn-fo", "cname")
	// Wildcards: a simple one with two types, one with a health-aware set; the names they
	// answer, one below, and the empty non-terminal above.
	add(p, at("*.w", simple(config.TypeA, ip4())))
	add(p, at("*.w", simple(config.TypeTXT, `"wild"`)))
	policySet(p, "*.mw", config.TypeA, config.PolicyMultivalue, config.NoHealthyNoData)
	for _, n := range []string{label("x") + ".w", "a.b.w", "w", label("y") + ".mw"} {
		name(p, n, "wildcard")
	}
	// An empty non-terminal.
	add(p, at("a.b.deep", simple(config.TypeA, ip4())))
	name(p, "b.deep", "ent")
	name(p, "a.b.deep", "simple")
	// Delegations to servers elsewhere: secure (with a DS) and insecure, and one with glue;
	// only their DS is asked (the rest would be looked for below the cut, at servers that do
	// not exist or do not answer).
	add(p, at("sec", simple(config.TypeNS, "ns1.elsewhere.example.")))
	add(p, at("sec", simple(config.TypeDS, fmt.Sprintf("%d 13 2 %064X", 1+r.IntN(65000), r.Uint64()))))
	add(p, at("ins", simple(config.TypeNS, "ns1.elsewhere.example.", "ns2.elsewhere.example.")))
	// A delegation with glue: a name server below the cut and one at the cut itself.
	add(p, at("gl", simple(config.TypeNS, "ns.gl."+vdParent, "gl."+vdParent)))
	add(p, at("ns.gl", simple(config.TypeA, ip4())))
	add(p, at("gl", simple(config.TypeA, ip4())))
	add(p, at("gl", simple(config.TypeAAAA, ip6())))
	c.names = append(c.names, vdName{name: "sec." + vdParent, kind: "delegation", onlyDS: true},
		vdName{name: "ins." + vdParent, kind: "delegation", onlyDS: true},
		vdName{name: "gl." + vdParent, kind: "delegation", onlyDS: true})
	// The hosted children: delegated to ns1, the signed one with its DS (zones adds it).
	add(p, at("sc", simple(config.TypeNS, "ns1."+vdParent)))
	add(p, at("uc", simple(config.TypeNS, "ns1."+vdParent)))
	// Edge values: a long CAA (past what a dns.CAA packs), UTF-8 in one; a TXT of many strings
	// and escapes; SRV with the target "." (no service) and a real one; a null MX.
	add(p, at("caa", simple(config.TypeCAA,
		`0 issue "`+strings.Repeat("a", 1000+r.IntN(100))+`"`,
		`0 issuewild "`+strings.Repeat("é", 100+r.IntN(50))+`"`,
		`0 iodef "mailto:a@example.net"`)))
	name(p, "caa", "edge")
	var strs []string
	for i := range 20 + r.IntN(20) {
		strs = append(strs, fmt.Sprintf(`"%d \"q\" \\ ; %s"`, i, strings.Repeat("t", r.IntN(60))))
	}
	add(p, at("txt", simple(config.TypeTXT, strings.Join(strs, " "), `""`)))
	name(p, "txt", "edge")
	add(p, at("_sip._tcp", simple(config.TypeSRV, "0 0 0 .")))
	add(p, at("_ldap._tcp", simple(config.TypeSRV, "10 5 389 www."+vdParent, "20 0 389 ns1."+vdParent)))
	name(p, "_sip._tcp", "edge")
	name(p, "_ldap._tcp", "edge")
	add(p, at("nomail", simple(config.TypeMX, "0 .")))
	name(p, "nomail", "edge")
	// A large set: as many bytes of TXT as the configuration accepts (it keeps room for two
	// signatures), found by bisection.
	add(p, at("big", vdLargeTXT(p, "big")))
	name(p, "big", "large")
	// Missing names.
	name(p, label("nx"), "missing")
	name(p, "nx.b.deep", "missing")

	// The signed child: records, a failover set that answers no data, a wildcard, an alias.
	ch := &c.child
	name(ch, "@", "child-apex")
	add(ch, at("www", simple(config.TypeA, ip4())))
	add(ch, at("www", simple(config.TypeTXT, `"child"`)))
	name(ch, "www", "child")
	policySet(ch, "fo", config.TypeA, config.PolicyFailover, config.NoHealthyNoData)
	name(ch, "fo", "child")
	add(ch, config.RecordSet{Name: "al", Type: config.TypeA, Alias: "fo"})
	name(ch, "al", "child")
	add(ch, at("*", simple(config.TypeTXT, `"child wild"`)))
	name(ch, label("cw"), "child")
	add(ch, at("@", simple(config.TypeMX, "10 www."+vdChild)))

	// The unsigned child: provably insecure throughout.
	u := &c.plain
	name(u, "@", "unsigned")
	add(u, at("www", simple(config.TypeA, ip4())))
	name(u, "www", "unsigned")
	policySet(u, "fo", config.TypeA, config.PolicyFailover, config.NoHealthyNoData)
	name(u, "fo", "unsigned")
	name(u, label("nx"), "unsigned")
	add(p, at("cn-plain", simple(config.TypeCNAME, "www."+vdPlain)))
	c.names = append(c.names, vdName{name: "cn-plain." + vdParent, kind: "cname", insecure: true})
	return c
}

// vdLargeTXT returns a TXT record set of 16 records at owner of zone, each as long as the
// configuration accepts for the set.
func vdLargeTXT(z *config.Zone, owner string) config.RecordSet {
	const n = 16
	build := func(vlen int) config.RecordSet {
		rs := config.RecordSet{Name: owner, Type: config.TypeTXT, Records: make([]config.Record, n)}
		for i := range rs.Records {
			rs.Records[i].Value = fmt.Sprintf("%02d", i) + strings.Repeat("x", vlen-2)
		}
		return rs
	}
	valid := func(vlen int) bool {
		rs := build(vlen)
		return new(config.Document).ValidateRecordSet(z, &rs, nil, func(string) bool { return true }) == nil
	}
	lo, hi := 100, rdata.MaxValue
	if !valid(lo) {
		return build(lo) // validation of the zone says why
	}
	for lo < hi {
		if mid := (lo + hi + 1) / 2; valid(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return build(lo)
}
