package state

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// servedProblem is a problem of one stored record set (by key) that no location would serve
// as written; fe.Path is relative to the record set.
type servedProblem struct {
	key string
	fe  config.FieldError
}

// validateServed appends to es what the edit makes of the zones that locations would accept
// and never serve as written (config.ServedProblems: data below a delegation, a delegation
// without its glue, an alias that answers nothing; and a zone's data at or below a hosted
// child it does not delegate), as a whole document's Validate refuses them. Each zone where a
// change can matter (servedMatters, which asks the served index, not the zone) is read whole,
// before and after the edit, and only the problems the edit brings are reported (a zone stored before these rules keeps taking writes). Zones put whole
// had their own problems found by ValidateZone: only the hosted-child rule is read there.
func (e *Edit) validateServed(es config.Errors, whole map[string]bool) config.Errors {
	scan := map[string]bool{} // apex → the zone's own rules too
	for k := range e.sets {
		apex, owner, typ := splitSetKey(k)
		if !whole[apex] && e.servedMatters(apex, owner, typ) {
			scan[apex] = true
		}
	}
	for apex := range e.zones {
		if _, ok := scan[apex]; !ok {
			scan[apex] = false
		}
		// A zone put or deleted changes what its parent may hold at and below its apex.
		for n := parentOf(apex); n != "."; n = parentOf(n) {
			if _, ok := e.Next.zones.Get(n); ok {
				if _, seen := scan[n]; !seen {
					scan[n] = false
				}
				break
			}
		}
	}
	for _, apex := range slices.Sorted(maps.Keys(scan)) {
		for _, p := range e.servedNew(apex, scan[apex]) {
			rs, _ := e.Next.sets.Get(p.key)
			prefix := e.prefix("record_sets", rs.Name+" "+string(rs.Type))
			if prefix == "" && !e.sets[p.key] {
				// A problem of a record set other than the one written: name it.
				prefix = fmt.Sprintf("record_sets[%q]", rs.Name+" "+string(rs.Type))
			}
			es = appendAt(es, prefix, config.Errors{p.fe})
		}
	}
	return es
}

// servedNew returns the problems of zone apex (servedProblems, with the zone's own rules when
// own is set) that the edit brings: those of its state that its base does not have.
func (e *Edit) servedNew(apex string, own bool) []servedProblem {
	before := map[string]bool{}
	for _, p := range servedProblems(e.base, apex, own) {
		before[p.key+"\x00"+p.fe.Error()] = true
	}
	var out []servedProblem
	for _, p := range servedProblems(e.Next, apex, own) {
		if !before[p.key+"\x00"+p.fe.Error()] {
			out = append(out, p)
		}
	}
	return out
}

// servedMatters reports whether a change of the record set owner/typ in zone apex can change
// what config.ServedProblems finds, without reading the zone: a set that delegates (NS) or
// aliases, before or after the edit; one at or near a name that a delegation or an alias of
// the zone names (servedNear); an address at a delegation (glue or refused); or one below a
// delegation or a hosted child zone.
func (e *Edit) servedMatters(apex, owner string, typ config.RecordType) bool {
	if typ == config.TypeNS {
		return true
	}
	k := setKey(apex, owner, typ)
	for _, s := range []*State{e.base, e.Next} {
		if rs, ok := s.sets.Get(k); ok && rs.Alias != "" {
			return true
		}
		if s.servedNear(apex, owner) {
			return true
		}
	}
	for n := owner; n != apex && strings.HasSuffix(n, "."+apex); n = parentOf(n) {
		if _, hosted := e.Next.zones.Get(n); hosted {
			return true
		}
		if n == owner && typ != config.TypeA && typ != config.TypeAAAA {
			continue // an address at a delegation is glue or refused (config's atCut)
		}
		if _, cut := e.Next.sets.Get(setKey(apex, n, config.TypeNS)); cut {
			return true
		}
		if _, cut := e.base.sets.Get(setKey(apex, n, config.TypeNS)); cut {
			return true
		}
	}
	return false
}

// Kinds of the served index (State.served), whose keys are a zone's prefix, a kind and a
// name's labels from the root down (servedKey).
const (
	servedRef  = "r" // a name that a delegation (its name servers) or an alias names
	servedWild = "w" // the owner of a wildcard record set
)

// servedKey is the key of name (absolute, lower case) of zone apex in the served index: its
// labels from the root down, each ended by a byte no name holds, so that the keys of the
// names at and below a name are those that begin with its key.
func servedKey(apex, kind, name string) string {
	labels := dns.SplitDomainName(name)
	var b strings.Builder
	b.Grow(len(apex) + len(kind) + len(name) + 2)
	b.WriteString(zonePrefix(apex))
	b.WriteString(kind)
	for i := len(labels) - 1; i >= 0; i-- {
		b.WriteString(labels[i])
		b.WriteByte(1)
	}
	return b.String()
}

// indexServed counts (delta 1) or uncounts (delta -1) in the served index the names that the
// record set rs at owner of zone apex names (config.ServedReferences), and its owner when it
// is a wildcard. putSet and deleteSet call it, so every state (restored from a snapshot
// too) holds the index of its record sets.
func (e *Edit) indexServed(apex, owner string, rs *config.RecordSet, delta int) {
	refs := config.ServedReferences(apex, owner, rs)
	wild := strings.HasPrefix(owner, "*.")
	if len(refs) == 0 && !wild {
		return
	}
	keys := make([]string, 0, len(refs)+1)
	for _, t := range refs {
		keys = append(keys, servedKey(apex, servedRef, t))
	}
	if wild {
		keys = append(keys, servedKey(apex, servedWild, owner))
	}
	for _, k := range keys {
		n, _ := e.Next.served.Get(k)
		if n += delta; n <= 0 {
			e.Next.served, _ = e.Next.served.Delete(e.tok, k)
		} else {
			e.Next.served = e.Next.served.Set(e.tok, k, n)
		}
	}
}

// servedNear reports whether a write of a record set at owner in zone apex, one that neither
// delegates nor aliases, can change how the served rules resolve a name t that a delegation
// or an alias of the zone names, read from the served index. They read t's own record sets
// (owner == t); whether t exists, which a set at or below it decides (owner at or below t);
// and when it does not, the wildcard at t's closest encloser, which the write changes when
// it is a wildcard above t, or when it makes a name above t exist or not: then owner and t
// are below one name h just under the apex, and there is a wildcard to find (below h, or at
// the apex's). Nothing else of the zone reads t's or the owner's sets: a write of an address
// elsewhere cannot change what config.ServedProblems finds (below a delegation aside, which
// servedMatters checks).
func (s *State) servedNear(apex, owner string) bool {
	if s.served.Len() == 0 {
		return false
	}
	has := func(kind, name string) bool {
		_, ok := s.served.Get(servedKey(apex, kind, name))
		return ok
	}
	under := func(kind, name string) bool {
		for range s.served.Prefix(servedKey(apex, kind, name)) {
			return true
		}
		return false
	}
	if owner == apex {
		return has(servedRef, apex)
	}
	if !strings.HasSuffix(owner, "."+apex) {
		return false
	}
	h := owner
	for n := owner; n != apex; n = parentOf(n) {
		if has(servedRef, n) {
			return true
		}
		h = n
	}
	if p, ok := strings.CutPrefix(owner, "*."); ok && under(servedRef, p) {
		return true
	}
	return under(servedRef, h) && (has(servedWild, "*."+apex) || under(servedWild, h))
}

// servedProblems returns the problems of zone apex in s that no location would serve as
// written: config.ServedProblems when own is set, and always the record sets at or below a
// hosted child zone that the zone does not delegate.
func servedProblems(s *State, apex string, own bool) []servedProblem {
	if _, ok := s.zones.Get(apex); !ok {
		return nil
	}
	var keys []string
	var sets []*config.RecordSet
	delegated := map[string]bool{}
	for k, rs := range s.sets.Prefix(zonePrefix(apex)) {
		keys = append(keys, k)
		sets = append(sets, rs)
		if _, owner, typ := splitSetKey(k); typ == config.TypeNS {
			delegated[owner] = true
		}
	}
	var out []servedProblem
	if own {
		for _, fe := range config.ServedProblems(apex, sets) {
			rest, _ := strings.CutPrefix(fe.Path, "record_sets[")
			num, field, _ := strings.Cut(rest, "]")
			j, err := strconv.Atoi(num)
			if err != nil || j < 0 || j >= len(keys) {
				continue
			}
			out = append(out, servedProblem{keys[j], config.FieldError{Path: strings.TrimPrefix(field, "."), Message: fe.Message}})
		}
	}
	for _, k := range keys {
		_, owner, _ := splitSetKey(k)
		for n := owner; n != apex && strings.HasSuffix(n, "."+apex); n = parentOf(n) {
			if _, hosted := s.zones.Get(n); hosted {
				if !delegated[n] {
					out = append(out, servedProblem{k, config.FieldError{Message: config.HostedChildProblem(owner, n, fmt.Sprintf("zones[%q]", n))}})
				}
				break
			}
		}
	}
	return out
}

// parentOf returns name less its first label; the root stays the root.
func parentOf(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return "."
	}
	return name[off:]
}
