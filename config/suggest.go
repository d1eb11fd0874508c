package config

import (
	"reflect"
	"sort"
)

// closest returns the field name of fields nearest to key, when one is near enough to be
// what was meant: at most one edit (a letter added, removed, changed, or two swapped) for
// every three letters of key, and at least one. Ties go to the name first in order; "" when
// none is near.
func closest(key string, fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	return Suggest(key, names)
}

// Suggest returns the name of names nearest to key by the rule of the configuration's
// unknown fields (see closest), so that other files Vigil reads suggest alike; "" when none
// is near enough.
func Suggest(key string, names []string) string {
	names = append([]string(nil), names...)
	sort.Strings(names)
	best, bestDist := "", max(1, (len([]rune(key))+2)/3)+1
	for _, name := range names {
		if d := editDistance(key, name); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the number of edits that turn a into b, each a rune added, removed or
// changed, or two adjacent runes swapped (the optimal string alignment distance).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the table of distances between prefixes of ra and rb.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
