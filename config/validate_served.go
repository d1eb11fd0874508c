package config

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config/rdata"
)

// MaxAliasChain is the most aliases an alias may pass through to reach a record set with
// records, as a location follows them.
const MaxAliasChain = 8

// The rules of this file refuse what a location would accept and never serve as written:
// data hidden below a delegation, a referral that cannot be followed, an alias that answers
// nothing. They need the whole zone (and, for hosted children, the whole document), so
// they run after the rules of each record set.

// servedSet is a record set of a zone as the served rules read it.
type servedSet struct {
	j     int // index in the zone
	rs    *RecordSet
	owner string // absolute, lower case
	typ   RecordType
}

// servedZone indexes a zone's valid record sets by owner and type.
type servedZone struct {
	apex  string
	sets  []servedSet
	byKey map[setKey]int // → index in sets
	names map[string]bool
	// targets holds every name an NS record set of the zone names.
	targets map[string]bool
}

func newServedZone(apex string, sets []*RecordSet) *servedZone {
	sz := &servedZone{apex: apex, byKey: make(map[setKey]int, len(sets)), names: map[string]bool{apex: true}, targets: map[string]bool{}}
	for j, rs := range sets {
		typ := RecordType(strings.ToUpper(string(rs.Type)))
		owner := ownerName(rs.Name, apex)
		if rs.Name == "" || !isRecordType(typ) || nameProblem(strings.TrimPrefix(owner, "*.")) != "" || !inZone(owner, apex) {
			continue // reported by the rules of each set
		}
		if _, dup := sz.byKey[setKey{owner, typ}]; dup {
			continue
		}
		sz.byKey[setKey{owner, typ}] = len(sz.sets)
		sz.sets = append(sz.sets, servedSet{j: j, rs: rs, owner: owner, typ: typ})
		for n := owner; n != apex && !sz.names[n]; n = parentName(n) {
			sz.names[n] = true
		}
		if typ == TypeNS {
			for _, t := range nsTargets(owner, rs) {
				sz.targets[t] = true
			}
		}
	}
	return sz
}

// parentName returns name less its first label; the root stays the root.
func parentName(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return "."
	}
	return name[off:]
}

// nsTargets returns the names an NS record set's records name, absolute and lower case.
func nsTargets(owner string, rs *RecordSet) []string {
	var out []string
	for _, r := range rs.Records {
		if rr, err := rdata.Parse(dns.Fqdn(owner), dns.TypeNS, 0, r.Value); err == nil {
			out = append(out, absName(rr.(*dns.NS).Ns))
		}
	}
	return out
}

func (sz *servedZone) get(owner string, t RecordType) *servedSet {
	if i, ok := sz.byKey[setKey{owner, t}]; ok {
		return &sz.sets[i]
	}
	return nil
}

// cutAt returns the delegation at or above name (an NS record set below the apex), with
// strict excluding name itself; "" when there is none.
func (sz *servedZone) cutAt(name string, strict bool) string {
	n := name
	if strict {
		n = parentName(n)
	}
	for ; n != sz.apex && inZone(n, sz.apex); n = parentName(n) {
		if sz.get(n, TypeNS) != nil {
			return n
		}
	}
	return ""
}

// lookup returns the record set of type t that answers name, as a location finds it: the
// name's own, or when the zone has no such name the wildcard's at its closest encloser (RFC
// 4592); nil when none does.
func (sz *servedZone) lookup(name string, t RecordType) *servedSet {
	if sz.names[name] {
		return sz.get(name, t)
	}
	for n := parentName(name); inZone(n, sz.apex); n = parentName(n) {
		if sz.names[n] {
			return sz.get("*."+n, t)
		}
	}
	return nil
}

// served checks the zone's record sets against what a location serves; path(j, field)
// names a problem of set j.
func (sz *servedZone) served(add func(j int, field, format string, args ...any)) {
	for i := range sz.sets {
		s := &sz.sets[i]
		if cut := sz.cutAt(s.owner, true); cut != "" {
			sz.belowCut(s, cut, add)
			continue
		}
		if (s.typ == TypeA || s.typ == TypeAAAA) && s.owner != sz.apex && sz.get(s.owner, TypeNS) != nil {
			sz.atCut(s, add)
			continue
		}
		if s.typ == TypeNS && s.owner != sz.apex {
			sz.delegation(s, add)
		}
		if s.rs.Alias != "" && (s.typ == TypeA || s.typ == TypeAAAA) {
			sz.alias(s, add)
		}
	}
}

// belowCut refuses a set below the delegation at cut, except glue: an A or AAAA record set,
// answered whole, at a name that an NS record set of the zone names.
func (sz *servedZone) belowCut(s *servedSet, cut string, add func(j int, field, format string, args ...any)) {
	hidden := fmt.Sprintf("%s lies below the delegation at %s: resolvers ask the delegated zone's servers for it, so no location answers it", s.owner, cut)
	if s.typ != TypeA && s.typ != TypeAAAA || strings.HasPrefix(s.owner, "*.") {
		add(s.j, "", "%s; remove it, or the NS record set at %s", hidden, cut)
		return
	}
	sz.glue(s, hidden, add)
}

// atCut refuses an address record set at a delegation (beside its NS record set) that is not
// glue: resolvers get a referral at that name, so it is served only in the additional section
// of a referral, and only when an NS record set of the zone names it. (Other types beside
// the NS are refused by the rules of each set.)
func (sz *servedZone) atCut(s *servedSet, add func(j int, field, format string, args ...any)) {
	hidden := fmt.Sprintf("%s is delegated (it has an NS record set), so resolvers get a referral there and no location answers its %s record set", s.owner, s.typ)
	sz.glue(s, hidden, add)
}

// glue refuses an address record set that a referral could carry only as glue, hidden says
// why it is never answered itself, unless it is glue: named by an NS record set of the zone,
// with records of its own, answered whole.
func (sz *servedZone) glue(s *servedSet, hidden string, add func(j int, field, format string, args ...any)) {
	switch {
	case !sz.targets[s.owner]:
		add(s.j, "", "%s, and no NS record set names it, so it is not glue either; remove it, or name it as a name server", hidden)
	case s.rs.Alias != "":
		add(s.j, "alias", "%s except as glue, which is served as written: give it records instead of an alias", hidden)
	case s.rs.Policy != "" && s.rs.Policy != PolicySimple:
		add(s.j, "policy", "%s except as glue, which a referral carries whole: use simple, got %s", hidden, s.rs.Policy)
	}
}

// delegation refuses a delegation that a resolver cannot follow: one that names a server
// inside the zone without its address.
func (sz *servedZone) delegation(s *servedSet, add func(j int, field, format string, args ...any)) {
	for k, t := range nsTargets(s.owner, s.rs) {
		if !inZone(t, sz.apex) {
			continue
		}
		field := fmt.Sprintf("records[%d].value", k)
		a, aaaa := sz.get(t, TypeA), sz.get(t, TypeAAAA)
		if cut := sz.cutAt(t, false); cut != "" {
			// Glue: only this zone can give the address, in the referral.
			if a == nil && aaaa == nil {
				add(s.j, field, "name server %s lies in the delegated zone %s, so a referral must carry its address (glue): add an A or AAAA record set at %s, or name a server outside %s", t, cut, t, cut)
			}
			continue
		}
		if a == nil && aaaa == nil && sz.lookup(t, TypeA) == nil && sz.lookup(t, TypeAAAA) == nil {
			add(s.j, field, "name server %s is in this zone but has no address, so the delegation cannot be followed: add an A or AAAA record set at %s", t, t)
		}
	}
}

// alias follows an alias as a location does and refuses one that answers nothing whatever
// the health of its target: a missing target, a CNAME, a delegated name, a loop.
func (sz *servedZone) alias(s *servedSet, add func(j int, field, format string, args ...any)) {
	target := ownerName(s.rs.Alias, sz.apex)
	if nameProblem(target) != "" || !inZone(target, sz.apex) || target == s.owner {
		return // reported by the rules of each set
	}
	path := []string{s.owner}
	for range MaxAliasChain {
		if cut := sz.cutAt(target, false); cut != "" {
			add(s.j, "alias", "alias target %s is at or below the delegation at %s, whose data the delegated zone serves: alias a name of this zone that is not delegated", target, cut)
			return
		}
		for _, p := range path {
			if p == target {
				add(s.j, "alias", "aliases form a loop: %s -> %s; end the chain at a record set with records", strings.Join(path, " -> "), target)
				return
			}
		}
		path = append(path, target)
		t := sz.lookup(target, s.typ)
		switch {
		case t == nil && sz.lookup(target, TypeCNAME) != nil:
			add(s.j, "alias", "alias target %s is a CNAME: an alias answers with its target's %s records, not a CNAME; alias the name the CNAME points at", target, s.typ)
			return
		case t == nil:
			add(s.j, "alias", "alias target %s has no %s record set: add one, or alias a name that has one", target, s.typ)
			return
		case t.rs.Alias == "":
			return
		}
		target = ownerName(t.rs.Alias, sz.apex)
	}
	add(s.j, "alias", "alias chain %s is longer than %d aliases: alias the last name's target directly", strings.Join(path, " -> "), MaxAliasChain)
}

// ServedProblems returns the problems of a zone's record sets that no location would serve
// as written: records below a delegation other than glue, a delegation to a name server
// inside the zone without its address, an alias that resolves to nothing (a missing name, a
// CNAME, a delegated name, a loop). apex is the zone's name; paths are "record_sets[j]..."
// with j the index in sets. Sets that break the rules of each set are skipped: Validate
// reports those.
func ServedProblems(apex string, sets []*RecordSet) Errors {
	apex = absName(apex)
	if !needsServedRules(apex, sets) {
		return nil
	}
	var es Errors
	newServedZone(apex, sets).served(func(j int, field, format string, args ...any) {
		p := fmt.Sprintf("record_sets[%d]", j)
		if field != "" {
			p = join(p, field)
		}
		es.add(p, format, args...)
	})
	return es
}

// validateServed applies ServedProblems to zone z at path p.
func (v *validator) validateServed(z *Zone, p, apex string) {
	if apex == "" {
		return
	}
	sets := make([]*RecordSet, len(z.RecordSets))
	for j := range z.RecordSets {
		sets[j] = &z.RecordSets[j]
	}
	for _, e := range ServedProblems(apex, sets) {
		v.add(join(p, e.Path), "%s", e.Message)
	}
}

// validateHostedChildren refuses a zone's record sets at or below the apex of another zone
// of the document unless the zone delegates that child there (an NS record set at its
// apex): a location answers every name from the nearest zone that its name server serves, so
// they would be answered by some name servers and not others.
func (v *validator) validateHostedChildren() {
	if len(v.zones) < 2 {
		return
	}
	for i := range v.doc.Zones {
		z := &v.doc.Zones[i]
		apex := absName(z.Name)
		if k, ok := v.zones[apex]; !ok || k != i {
			continue
		}
		delegated := map[string]bool{}
		for j := range z.RecordSets {
			if rs := &z.RecordSets[j]; RecordType(strings.ToUpper(string(rs.Type))) == TypeNS {
				delegated[ownerName(rs.Name, apex)] = true
			}
		}
		for j := range z.RecordSets {
			rs := &z.RecordSets[j]
			owner := ownerName(rs.Name, apex)
			if rs.Name == "" || owner == apex || !inZone(owner, apex) {
				continue
			}
			for n := owner; n != apex; n = parentName(n) {
				k, hosted := v.zones[n]
				if !hosted {
					continue
				}
				if !delegated[n] {
					v.add(fmt.Sprintf("zones[%d].record_sets[%d]", i, j), "%s", HostedChildProblem(owner, n, fmt.Sprintf("zones[%d]", k)))
				}
				break
			}
		}
	}
}

// HostedChildProblem says why a record set at owner cannot stay in its zone when child, a
// zone at or above owner and below the set's zone, is hosted too (named childRef, e.g.
// "zones[1]") and the set's zone does not delegate it.
func HostedChildProblem(owner, child, childRef string) string {
	return fmt.Sprintf("%s is in zone %s (%s), which is hosted too: its name servers answer it from there; move the record set to %s, or delegate %s with an NS record set at it", owner, child, childRef, childRef, child)
}

// ServedReferences returns the names of zone apex that the record set rs at owner (absolute,
// lower case) makes the served rules follow: the name servers it names when it is an NS
// record set below the apex (a delegation, whose servers inside the zone need addresses), and
// its alias's target. Only names inside the zone are returned, absolute and lower case. A
// write of a set that neither delegates nor aliases can change what ServedProblems finds only
// at or near such a name, or below a delegation: the control plane indexes them to know when
// to read the zone.
func ServedReferences(apex, owner string, rs *RecordSet) []string {
	apex = absName(apex)
	var out []string
	if RecordType(strings.ToUpper(string(rs.Type))) == TypeNS && owner != apex {
		for _, t := range nsTargets(owner, rs) {
			if t = rdata.Lower(t); inZone(t, apex) {
				out = append(out, t)
			}
		}
	}
	if rs.Alias != "" {
		if t := ownerName(rs.Alias, apex); t != "" && inZone(t, apex) {
			out = append(out, t)
		}
	}
	return out
}

// needsServedRules reports whether the served rules can find anything in the zone: only
// delegations (NS record sets below the apex) and aliases can break them, and most zones have
// neither, so their compilation skips the index.
func needsServedRules(apex string, sets []*RecordSet) bool {
	for _, rs := range sets {
		if rs.Alias != "" || strings.EqualFold(string(rs.Type), string(TypeNS)) && ownerName(rs.Name, apex) != apex {
			return true
		}
	}
	return false
}
