package location

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
	"github.com/vigil-dns/vigil/internal/ptree"
)

// NameServer is one name server of a zone: a virtual name server of the zone's shard, or a
// name server the zone names itself.
type NameServer struct {
	// Index is the virtual name server's number in the fleet, or -1 for a name server that is
	// not a virtual name server (one from the zone's own name_servers list).
	Index int
	// Name is the name server's absolute domain name, e.g. "ns-17.ns.vigil.test.".
	Name string
	// Addr is the name server's address, when known. It is served as glue when Name lies in
	// the zone.
	Addr netip.Addr
}

// Snapshot is an immutable, compiled view of the hosted zones: what every query reads. Build
// one with NewSnapshot, or from another with Patch (which compiles only the zones that
// changed), and install it with Server.SetSnapshot or Server.PatchZones.
type Snapshot struct {
	zones map[string]*zone
	// byCheck holds, for each health check, the first record set whose answers it can
	// change, and moreByCheck the others of a check that changes several (few do: a slice
	// per check would cost each 32 bytes more): persistent maps, shared with the snapshot
	// this one was patched from.
	byCheck     ptree.Map[*rrset]
	moreByCheck ptree.Map[[]*rrset]
	// maxRecords is at least the largest record set, so that selection buffers never grow.
	maxRecords int
	// maxLabels is the most labels of any zone apex, to bound the zone search.
	maxLabels int
	// failed holds, by apex, why each zone of the configuration that did not compile failed;
	// such a zone keeps its previous version in zones, when it had one (see Rebuild).
	failed map[string]string
}

// setsFor returns the record sets whose answers check id can change.
func (s *Snapshot) setsFor(id string) []*rrset {
	first, ok := s.byCheck.Get(id)
	if !ok {
		return nil
	}
	more, _ := s.moreByCheck.Get(id)
	return append([]*rrset{first}, more...)
}

// healthSets returns every record set that consults health checks.
func (s *Snapshot) healthSets() iter.Seq[*rrset] {
	return func(yield func(*rrset) bool) {
		for _, z := range s.zones {
			for _, rs := range z.healthSets {
				if !yield(rs) {
					return
				}
			}
		}
	}
}

// zone is one hosted zone, compiled.
type zone struct {
	name   string // apex, lower case, absolute
	soa    *dns.SOA
	negTTL uint32 // min(SOA TTL, SOA MINIMUM), RFC 2308
	// neg is the SOA record of negative answers, with the negative TTL.
	neg *dns.SOA
	ns  []dns.RR
	// glue holds the A and AAAA records of the in-zone name-server names.
	glue []dns.RR
	// shard is the set of virtual name servers that answer this zone.
	shard map[int]bool
	names map[string]*node
	// cuts says the zone delegates names below its apex (NS record sets there).
	cuts bool
	// wild says the zone holds wildcard names ("*.<name>"), for the lookup of RFC 4592.
	wild bool
	// chain, when the zone proves denials with its NSEC chain (config.DenialNSEC), is
	// that chain; nil for compact denial (an NSEC made for each name denied).
	chain *nsecChain
	ttl   uint32
	// counters caches this zone's query counters, filled as queries come.
	counters atomic.Pointer[counterCache]
	// healthSets lists the zone's record sets that consult health checks, by label.
	healthSets []*rrset
	// served is the SOA this location answers when its serial follows the answers (a zone it
	// transfers out, serial.go); nil answers soa and neg.
	served atomic.Pointer[servedSOA]
	// gen rises after every change of the verdicts of the zone's record sets and of its
	// served SOA: the zone's cached answers made before are stale (cache.go).
	gen atomic.Uint64
}

// node is one owner name of a zone; a node without record sets is an empty non-terminal.
type node struct {
	sets []*rrset // sorted by type
}

// cname returns the node's CNAME record set, or nil.
func (n *node) cname() *rrset { return n.find(dns.TypeCNAME) }

// cut returns the NS record set of a node below the apex (a delegation), or nil.
func (n *node) cut() *rrset { return n.find(dns.TypeNS) }

// rrset is one record set, compiled: the configuration the selection reads, and the resource
// record of each record, in the same order. An alias set has no records: cfg.Alias is the
// absolute owner name of the record set of its type it answers as.
type rrset struct {
	// cfg is the configuration's record set itself (a control state.State's items are never
	// changed), or a copy when its name or alias had to be made absolute: a copy per set
	// would hold every set twice.
	cfg *config.RecordSet
	rrs []dns.RR
	// in is the zone the set is in.
	in *zone
	// rtype is the record type.
	rtype uint16
	// health says the policy consults health checks and some record has one.
	health bool
}

// label names the record set in metrics and logs: "<owner>/<type>".
func (rs *rrset) label() string { return rs.cfg.Name + "/" + dns.TypeToString[rs.rtype] }

// find returns the record set of type t at n, or nil.
func (n *node) find(t uint16) *rrset {
	for _, s := range n.sets {
		if s.rtype == t {
			return s
		}
	}
	return nil
}

// NewSnapshot compiles zones. shards maps a zone's apex to the name servers of its shard; a
// zone absent from shards uses the name servers it lists itself, and is then answered only on
// the main listener. Names are compared without case and may be given without the final dot.
// The error lists every problem found. The snapshot keeps the records of the zones' record
// sets (not copies): the caller must not change them afterwards (as with Patch and Rebuild).
func NewSnapshot(zones []config.Zone, shards map[string][]NameServer) (*Snapshot, error) {
	byApex := make(map[string][]NameServer, len(shards))
	for apex, nss := range shards {
		byApex[canonical(apex)] = nss
	}
	s := &Snapshot{zones: make(map[string]*zone, len(zones))}
	tok := new(ptree.Token)
	var errs []error
	for i := range zones {
		z, err := compileZone(&zones[i], nil, byApex[canonical(zones[i].Name)])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := s.zones[z.name]; dup {
			errs = append(errs, fmt.Errorf("location: zone %s: hosted twice", z.name))
			continue
		}
		s.add(tok, z)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// ZonePatch is one zone of a Patch: its configuration and name-server shard, or, with Zone
// nil, the zone Apex removed.
type ZonePatch struct {
	// Apex names the zone (any case, with or without the final dot).
	Apex string
	// Zone is the zone's configuration with its record sets; nil removes the zone.
	Zone *config.Zone
	// Sets, when not nil, are the zone's record sets in place of Zone.RecordSets: the
	// caller's own (a control state.State's), which the snapshot keeps and shares instead of
	// holding copies; they must never change afterwards.
	Sets []*config.RecordSet
	// Shard is the zone's name servers, as NewSnapshot's shards give them.
	Shard []NameServer
}

// Patch returns a snapshot that differs from s in the zones of patches only: each is compiled
// again (or removed), every other zone is shared with s. It costs the changed zones and a copy
// of the table of zones, not a compilation of every zone. A zone that does not compile keeps
// its version in s (if any) and is listed in ZoneStates with its error; the others change.
func (s *Snapshot) Patch(patches []ZonePatch) *Snapshot {
	n := &Snapshot{zones: maps.Clone(s.zones), byCheck: s.byCheck, moreByCheck: s.moreByCheck, maxRecords: s.maxRecords, failed: maps.Clone(s.failed)}
	tok := new(ptree.Token)
	for _, p := range patches {
		apex := canonical(p.Apex)
		old := n.zones[apex]
		delete(n.failed, apex)
		if p.Zone == nil {
			if old != nil {
				n.remove(tok, old)
			}
			continue
		}
		z, err := compileZone(p.Zone, p.Sets, p.Shard)
		if err == nil && z.name != apex {
			err = fmt.Errorf("location: zone %s patched as %s", z.name, apex)
		}
		if err != nil {
			n.fail(apex, err)
			continue
		}
		if old != nil {
			n.remove(tok, old)
		}
		n.add(tok, z)
	}
	for name := range n.zones {
		n.maxLabels = max(n.maxLabels, dns.CountLabel(name))
	}
	return n
}

// add hosts a compiled zone and indexes its health sets (s is not yet shared).
func (s *Snapshot) add(tok *ptree.Token, z *zone) {
	s.zones[z.name] = z
	s.maxLabels = max(s.maxLabels, dns.CountLabel(z.name))
	for _, n := range z.names {
		for _, rs := range n.sets {
			s.maxRecords = max(s.maxRecords, len(rs.rrs))
		}
	}
	z.eachCheck(func(id string, rs *rrset) {
		if _, ok := s.byCheck.Get(id); !ok {
			s.byCheck = s.byCheck.Set(tok, id, rs)
			return
		}
		more, _ := s.moreByCheck.Get(id)
		s.moreByCheck = s.moreByCheck.Set(tok, id, append(slices.Clip(more), rs))
	})
}

// remove stops hosting a zone and drops its health sets from the index (s is not yet shared).
func (s *Snapshot) remove(tok *ptree.Token, z *zone) {
	delete(s.zones, z.name)
	z.eachCheck(func(id string, _ *rrset) {
		old := s.setsFor(id)
		kept := slices.DeleteFunc(slices.Clone(old), func(rs *rrset) bool { return rs.in.name == z.name })
		switch {
		case len(kept) == len(old):
		case len(kept) == 0:
			s.byCheck, _ = s.byCheck.Delete(tok, id)
			s.moreByCheck, _ = s.moreByCheck.Delete(tok, id)
		default:
			s.byCheck = s.byCheck.Set(tok, id, kept[0])
			if len(kept) == 1 {
				s.moreByCheck, _ = s.moreByCheck.Delete(tok, id)
			} else {
				s.moreByCheck = s.moreByCheck.Set(tok, id, kept[1:])
			}
		}
	})
}

// eachCheck calls fn once for each health check and record set of the zone whose answers it
// can change.
func (z *zone) eachCheck(fn func(id string, rs *rrset)) {
	for _, rs := range z.healthSets {
		for i, r := range rs.cfg.Records {
			if r.HealthCheck == "" || slices.ContainsFunc(rs.cfg.Records[:i], func(o config.Record) bool { return o.HealthCheck == r.HealthCheck }) {
				continue
			}
			fn(r.HealthCheck, rs)
		}
	}
}

// Zones returns the apexes of the hosted zones, sorted.
func (s *Snapshot) Zones() []string {
	out := make([]string, 0, len(s.zones))
	for name := range s.zones {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// canonical returns name in lower case with the final dot.
func canonical(name string) string {
	return dns.Fqdn(strings.ToLower(strings.TrimSpace(name)))
}

// compileZone builds one zone and its name servers, of sets when not nil (else of
// cz.RecordSets).
func compileZone(cz *config.Zone, sets []*config.RecordSet, shard []NameServer) (*zone, error) {
	if sets == nil {
		sets = make([]*config.RecordSet, len(cz.RecordSets))
		for i := range cz.RecordSets {
			sets[i] = &cz.RecordSets[i]
		}
	}
	apex := canonical(cz.Name)
	if _, ok := dns.IsDomainName(apex); !ok || apex == "." {
		return nil, fmt.Errorf("location: zone %q: not a domain name", cz.Name)
	}
	// The table of names is made at its size (a name per set, and the apex's): grown by
	// doubling, it would hold up to twice the slots it needs.
	z := &zone{name: apex, names: make(map[string]*node, len(sets)+1), shard: map[int]bool{}, ttl: cz.TTL}
	if err := z.setNameServers(cz, sets, shard); err != nil {
		return nil, err
	}
	z.soa = buildSOA(cz, apex, z.ns[0].(*dns.NS).Ns)
	z.negTTL = min(z.soa.Hdr.Ttl, z.soa.Minttl)
	neg := *z.soa
	neg.Hdr.Ttl = z.negTTL
	z.neg = &neg
	z.addApexSets()
	if err := z.addRecordSets(sets); err != nil {
		return nil, err
	}
	// What the control plane refuses as never served as written (config.ServedProblems) is
	// refused here too, rather than compiled and silently left unanswered.
	if es := config.ServedProblems(apex, sets); len(es) > 0 {
		return nil, z.fail("%w", es)
	}
	slices.SortFunc(z.healthSets, compareLabels)
	if cz.Signed() && cz.DNSSEC.DenialMode() == config.DenialNSEC {
		z.chain = buildChain(z)
	}
	return z, nil
}

// fail returns an error of zone z.
func (z *zone) fail(format string, args ...any) error {
	return fmt.Errorf("location: zone %s: "+format, append([]any{z.name}, args...)...)
}

// addRecordSets adds the zone's record sets to z, sorts every name's sets by type and
// collects those with health checks; it returns every problem found.
func (z *zone) addRecordSets(sets []*config.RecordSet) error {
	var errs []error
	for i, cs := range sets {
		if err := z.addSet(cs); err != nil {
			errs = append(errs, z.fail("record_sets[%d]: %w", i, err))
		}
	}
	for name, n := range z.names {
		if n.cname() != nil && len(n.sets) > 1 {
			errs = append(errs, z.fail("%s: a CNAME cannot share its name with other records", name))
		}
		sort.Slice(n.sets, func(i, j int) bool { return n.sets[i].rtype < n.sets[j].rtype })
		for _, rs := range n.sets {
			if rs.health {
				z.healthSets = append(z.healthSets, rs)
			}
		}
	}
	return errors.Join(errs...)
}

// node returns the node of name, creating it and the empty non-terminals between it and the
// apex.
func (z *zone) node(name string) *node {
	n := z.names[name]
	if n != nil {
		return n
	}
	n = &node{}
	z.names[name] = n
	for parent := name; parent != z.name; {
		off, end := dns.NextLabel(parent, 0)
		if end {
			break
		}
		parent = parent[off:]
		if _, ok := z.names[parent]; ok {
			break
		}
		z.names[parent] = &node{}
	}
	return n
}

// addSet compiles one record set into the zone: its values by rdata.Parse, the parser that
// validated them.
func (z *zone) addSet(cs *config.RecordSet) error {
	name := config.OwnerName(cs.Name, z.name)
	if _, ok := dns.IsDomainName(name); !ok {
		return fmt.Errorf("name %q: not a domain name", cs.Name)
	}
	if !dns.IsSubDomain(z.name, name) {
		return fmt.Errorf("name %s: outside the zone", name)
	}
	rtype, ok := dns.StringToType[strings.ToUpper(string(cs.Type))]
	if !ok || !slices.Contains(rdata.Types(), rtype) {
		return fmt.Errorf("%s: type %s is not served", name, cs.Type)
	}
	if rtype == dns.TypeNS && name == z.name {
		// The apex NS records are the zone's own (compileZone read them), or its shard's.
		return nil
	}
	// The record set is shared with the configuration, which is never changed once installed
	// (a control state.State's items are immutable): a copy would hold every set twice. One whose
	// name (or alias) is not yet absolute is copied, and its copy made so.
	rs := &rrset{cfg: cs, rtype: rtype, in: z}
	if cs.Name != name {
		c := *cs
		c.Name = name
		rs.cfg = &c
	}
	if cs.Alias != "" {
		if err := z.addAlias(rs, cs); err != nil {
			return fmt.Errorf("%s %s: %w", name, cs.Type, err)
		}
	} else if err := z.buildRecords(rs, cs); err != nil {
		return err
	}
	n := z.node(name)
	if n.find(rtype) != nil {
		return fmt.Errorf("%s %s: defined twice", name, cs.Type)
	}
	n.sets = append(n.sets, rs)
	if rtype == dns.TypeNS {
		z.cuts = true
	}
	if isWildcard(name) {
		z.wild = true
	}
	return nil
}
