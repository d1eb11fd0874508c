package control

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
// change can matter is read whole, before and after the edit, and only the problems the edit
// brings are reported (a zone stored before these rules keeps taking writes). Zones put whole
// had their own problems found by ValidateZone: only the hosted-child rule is read there.
func (e *edit) validateServed(es config.Errors, whole map[string]bool) config.Errors {
	scan := map[string]bool{}   // apex → the zone's own rules too
	refers := map[string]bool{} // apex → whether the zone delegates or aliases, before or after
	for k := range e.sets {
		apex, owner, typ := splitSetKey(k)
		if !whole[apex] && e.servedMatters(apex, owner, typ, refers) {
			scan[apex] = true
		}
	}
	for apex := range e.zones {
		if _, ok := scan[apex]; !ok {
			scan[apex] = false
		}
		// A zone put or deleted changes what its parent may hold at and below its apex.
		for n := parentOf(apex); n != "."; n = parentOf(n) {
			if _, ok := e.s.zones.Get(n); ok {
				if _, seen := scan[n]; !seen {
					scan[n] = false
				}
				break
			}
		}
	}
	for _, apex := range slices.Sorted(maps.Keys(scan)) {
		before := map[string]bool{}
		for _, p := range servedProblems(e.base, apex, scan[apex]) {
			before[p.key+"\x00"+p.fe.Error()] = true
		}
		for _, p := range servedProblems(e.s, apex, scan[apex]) {
			if before[p.key+"\x00"+p.fe.Error()] {
				continue
			}
			rs, _ := e.s.sets.Get(p.key)
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

// servedMatters reports whether a change of the record set owner/typ in zone apex can change
// what config.ServedProblems finds: a set that delegates (NS); one that gives an address or
// names (A, AAAA, CNAME) in a zone that delegates or aliases, where it may be glue or an
// alias's target; or one below a delegation or a hosted child zone. refers memoises per zone
// whether it delegates or aliases, so that an edit of many sets reads each zone once.
func (e *edit) servedMatters(apex, owner string, typ config.RecordType, refers map[string]bool) bool {
	switch typ {
	case config.TypeNS:
		return true
	case config.TypeA, config.TypeAAAA, config.TypeCNAME:
		r, ok := refers[apex]
		if !ok {
			r = delegatesOrAliases(e.base, apex) || delegatesOrAliases(e.s, apex)
			refers[apex] = r
		}
		if r {
			return true
		}
	}
	for n := owner; n != apex && strings.HasSuffix(n, "."+apex); n = parentOf(n) {
		if _, hosted := e.s.zones.Get(n); hosted {
			return true
		}
		if n == owner {
			continue
		}
		if _, cut := e.s.sets.Get(setKey(apex, n, config.TypeNS)); cut {
			return true
		}
		if _, cut := e.base.sets.Get(setKey(apex, n, config.TypeNS)); cut {
			return true
		}
	}
	return false
}

// delegatesOrAliases reports whether zone apex in s holds an NS record set below its apex or
// an alias: without either, no address or CNAME record set of the zone can be glue, an
// alias's target or part of an alias's chain, so config.ServedProblems has nothing to find in
// it (data below a cut needs a cut). It stops at the first it finds; a zone without either is
// read whole, which costs a fraction of the full check.
func delegatesOrAliases(s *State, apex string) bool {
	for k, rs := range s.sets.Prefix(zonePrefix(apex)) {
		if rs.Alias != "" {
			return true
		}
		if rs.Type != config.TypeNS {
			continue
		}
		if _, owner, _ := splitSetKey(k); owner != apex {
			return true
		}
	}
	return false
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
