package config

import (
	"fmt"
	"strings"
)

// Validating one item of a document without the whole document: a store that changes one
// check or record set at a time checks just that item against the rest, through these
// functions, which apply the same rules as Validate. Paths in their errors are relative to
// the item ("target.host", "records[0].value").

// ValidateSettings returns every problem of d's regions, quorum and name-server settings,
// ignoring its checks and zones; nil when there is none.
func (d *Document) ValidateSettings() error {
	v := newValidator(d, nil)
	v.validateRegions()
	v.validateQuorum()
	v.validateNameServers()
	return v.errs.err()
}

// ValidateCheck returns every problem of check c as a document with d's settings would hold
// it, where hasCheck says which check ids exist (a calculated check's children); nil when
// there is none. It does not look for cycles: see CalculatedCycle.
func (d *Document) ValidateCheck(c *Check, hasCheck func(id string) bool) error {
	v := newValidator(d, hasCheck)
	v.checkItem(c, "")
	return v.errs.err()
}

// ValidateZone returns every problem of zone z with its record sets, where hasCheck says
// which check ids exist (the records' health checks); nil when there is none.
func (d *Document) ValidateZone(z *Zone, hasCheck func(id string) bool) error {
	v := newValidator(d, hasCheck)
	v.zoneItem(z, "")
	return v.errs.err()
}

// ValidateRecordSet returns every problem of record set rs added to zone z (whose record
// sets are ignored) beside others, the zone's other record sets at the same owner name; nil
// when there is none. The errors name the other sets by owner and type.
func (d *Document) ValidateRecordSet(z *Zone, rs *RecordSet, others []RecordSet, hasCheck func(id string) bool) error {
	v := newValidator(d, hasCheck)
	apex := ""
	if z.Name != "" && nameProblem(absName(z.Name)) == "" {
		apex = absName(z.Name)
	}
	mini := *z
	mini.RecordSets = append(append(make([]RecordSet, 0, len(others)+1), others...), *rs)
	v.setRef = func(j int) string {
		return fmt.Sprintf("the %s record set", mini.RecordSets[j].Type)
	}
	v.validateRecordSets(&mini, "", apex)
	// Only the new set's problems, without its index in the zone made up here.
	prefix := fmt.Sprintf("record_sets[%d]", len(others))
	var out Errors
	for _, e := range v.errs {
		if rest, ok := strings.CutPrefix(e.Path, prefix); ok {
			e.Path = strings.TrimPrefix(rest, ".")
			out = append(out, e)
		}
	}
	return out.err()
}

// CalculatedCycle returns the cycle of calculated checks that passes through check id, as
// the ids along it from id back to id, or nil when there is none. children returns a
// check's children and whether it is a calculated check.
func CalculatedCycle(id string, children func(id string) ([]string, bool)) []string {
	seen := map[string]bool{}
	var path []string
	var visit func(c string) bool
	visit = func(c string) bool {
		kids, calculated := children(c)
		if !calculated {
			return false
		}
		path = append(path, c)
		for _, k := range kids {
			if k == id {
				path = append(path, id)
				return true
			}
			if !seen[k] && k != c {
				seen[k] = true
				if visit(k) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if visit(id) {
		return path
	}
	return nil
}

// CycleError is the problem of a calculated check caught in a cycle, as Validate words it.
func CycleError(cycle []string) FieldError {
	return FieldError{Path: "children", Message: cycleMessage(cycle)}
}
