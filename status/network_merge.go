package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The merge of the network view: the locations' digests side by side, and why they disagree.

// merge lays the digests side by side: one row a check, one cell a reachable location.
func merge(locs []NetworkLocation, ds []*Digest) *merged {
	byID := map[string]*NetworkRow{}
	heard := map[string][]RegionHeard{}
	for _, d := range ds {
		heard[d.Location] = d.Heard
		for _, c := range d.Checks {
			r := byID[c.ID]
			if r == nil {
				r = &NetworkRow{ID: c.ID, Cells: map[string]NetworkCell{}}
				byID[c.ID] = r
			}
			r.Cells[d.Location] = c.NetworkCell
		}
	}
	m := &merged{locations: locs, rows: make([]NetworkRow, 0, len(byID))}
	var unreachable []string
	for _, l := range locs {
		if !l.Reachable {
			unreachable = append(unreachable, l.ID)
		}
	}
	for _, r := range byID {
		r.Disagree, r.Reason = disagreement(r.Cells, heard)
		switch {
		case r.Disagree:
			r.Agreement = AgreementDisagree
			m.disagree++
		case len(unreachable) > 0:
			// The reachable agree; an unreachable location's verdict is not known, so neither
			// is whether every location agrees.
			r.Agreement = AgreementUnknown
			verb := "they agree"
			if len(unreachable) == 1 {
				verb = "it agrees"
			}
			r.Reason = strings.Join(unreachable, ", ") + " unreachable: whether " + verb + " is unknown"
			m.unknown++
		default:
			r.Agreement = AgreementAgree
		}
		m.rows = append(m.rows, *r)
	}
	slices.SortFunc(m.rows, func(a, b NetworkRow) int { return cmp.Compare(a.ID, b.ID) })
	return m
}

// disagreement says whether the cells differ in state, and if so why: which locations say
// what, with their counts, and which of them hear only some regions' checkers.
func disagreement(cells map[string]NetworkCell, heard map[string][]RegionHeard) (bool, string) {
	byState := map[string][]string{}
	for loc, c := range cells {
		byState[c.State] = append(byState[c.State], loc)
	}
	if len(byState) < 2 {
		return false, ""
	}
	states := slices.Sorted(func(yield func(string) bool) {
		for s := range byState {
			if !yield(s) {
				return
			}
		}
	})
	var parts []string
	for _, s := range states {
		locs := byState[s]
		slices.Sort(locs)
		var each []string
		for _, l := range locs {
			c := cells[l]
			each = append(each, fmt.Sprintf("%s (%d/%d fresh healthy)", l, c.Healthy, c.Fresh))
		}
		verb := " say "
		if len(locs) == 1 {
			verb = " says "
		}
		parts = append(parts, strings.Join(each, ", ")+verb+s)
	}
	why := strings.Join(parts, "; ")
	locs := slices.Sorted(func(yield func(string) bool) {
		for l := range cells {
			if !yield(l) {
				return
			}
		}
	})
	for _, l := range locs {
		var hears, deaf []string
		fresh, total := 0, 0
		for _, h := range heard[l] {
			fresh += h.Fresh
			total += h.Total
			if h.Fresh > 0 {
				hears = append(hears, h.Region)
			} else {
				deaf = append(deaf, h.Region)
			}
		}
		if len(deaf) > 0 {
			why += fmt.Sprintf("; %s hears only %s checkers (%d of %d fresh), none of %s",
				l, cmp.Or(strings.Join(hears, ", "), "no"), fresh, total, strings.Join(deaf, ", "))
		}
	}
	return true, why
}
