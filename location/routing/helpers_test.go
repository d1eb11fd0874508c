package routing

import (
	"slices"

	"github.com/vigil-dns/vigil/config"
)

// rec is a record with a value and, when check is not empty, a health check.
func rec(value, check string) config.Record {
	return config.Record{Value: value, HealthCheck: check}
}

// weighted is a record of a weighted set.
func weighted(value, check string, w int) config.Record {
	r := rec(value, check)
	r.Weight = &w
	return r
}

// role is a record of a failover set.
func role(value, check string, ro config.Role) config.Record {
	r := rec(value, check)
	r.Role = ro
	return r
}

// set is a record set of the given policy.
func set(policy config.Policy, recs ...config.Record) *config.RecordSet {
	return &config.RecordSet{Name: "www.demo.vigil.test.", Type: config.TypeA, Policy: policy, Records: recs}
}

// down returns a Health under which the named checks are unhealthy and every other check is
// healthy (as an unknown verdict is served).
func down(checks ...string) Health {
	return func(id string) bool { return !slices.Contains(checks, id) }
}

// values maps answer indices to record values.
func values(rs *config.RecordSet, idx []int) []string {
	vs := make([]string, len(idx))
	for k, i := range idx {
		vs[k] = rs.Records[i].Value
	}
	return vs
}

// sorted returns a sorted copy of vs.
func sorted(vs []string) []string {
	out := slices.Clone(vs)
	slices.Sort(out)
	return out
}
