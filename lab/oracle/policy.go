package oracle

import (
	"slices"

	"github.com/vigil-dns/vigil/config"
)

// Allowed is what a record set may answer for one assignment of health to its checks: Count
// distinct values drawn from Pool.
type Allowed struct {
	// Pool holds the values an answer may draw from.
	Pool []string
	// Count is how many values an answer holds.
	Count int
	// LastResort is set when no record was healthy and the pool is every record.
	LastResort bool
}

// Permits reports whether values (sorted) is an answer allowed by a.
func (a Allowed) Permits(values []string) bool {
	if len(values) != a.Count {
		return false
	}
	for i, v := range values {
		if i > 0 && values[i-1] == v {
			return false
		}
		if !slices.Contains(a.Pool, v) {
			return false
		}
	}
	return true
}

// Permitted is the oracle of Route 53's routing policies, written from their documented
// rules independently of package routing: what rs may answer when serving says which checks
// are served as healthy. Records without a health check are healthy. When no record the
// policy considers is healthy, every record is treated as healthy (last resort).
func Permitted(rs *config.RecordSet, serving func(check string) bool) Allowed {
	healthy := func(r config.Record) bool { return r.HealthCheck == "" || serving(r.HealthCheck) }
	values := func(keep func(config.Record) bool) []string {
		var out []string
		for _, r := range rs.Records {
			if keep(r) {
				out = append(out, r.Value)
			}
		}
		return out
	}
	all := values(func(config.Record) bool { return true })
	weight := func(r config.Record) int {
		if r.Weight == nil {
			return 0
		}
		return *r.Weight
	}
	switch rs.Policy {
	case config.PolicyMultivalue:
		pool, last := values(healthy), false
		if len(pool) == 0 {
			pool, last = all, true
		}
		return Allowed{Pool: pool, Count: min(len(pool), config.MaxMultivalueAnswers), LastResort: last}
	case config.PolicyWeighted:
		if pool := values(func(r config.Record) bool { return healthy(r) && weight(r) > 0 }); len(pool) > 0 {
			return Allowed{Pool: pool, Count: 1}
		}
		if pool := values(func(r config.Record) bool { return healthy(r) && weight(r) == 0 }); len(pool) > 0 {
			return Allowed{Pool: pool, Count: 1}
		}
		if pool := values(func(r config.Record) bool { return weight(r) > 0 }); len(pool) > 0 {
			return Allowed{Pool: pool, Count: 1, LastResort: true}
		}
		return Allowed{Pool: all, Count: min(1, len(all)), LastResort: true}
	case config.PolicyFailover:
		var primary, secondary *config.Record
		for i := range rs.Records {
			r := &rs.Records[i]
			if r.Role == config.RolePrimary && primary == nil {
				primary = r
			}
			if r.Role == config.RoleSecondary && secondary == nil {
				secondary = r
			}
		}
		switch {
		case primary == nil:
			// Not a valid failover set; config validation refuses it. Any one record.
			return Allowed{Pool: all, Count: min(1, len(all))}
		case healthy(*primary):
			return Allowed{Pool: []string{primary.Value}, Count: 1}
		case secondary != nil && healthy(*secondary):
			return Allowed{Pool: []string{secondary.Value}, Count: 1}
		}
		return Allowed{Pool: []string{primary.Value}, Count: 1, LastResort: true}
	}
	return Allowed{Pool: all, Count: len(all)}
}
