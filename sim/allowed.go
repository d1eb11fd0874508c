package sim

import (
	"slices"

	"github.com/vigil-dns/vigil/config"
)

// allowed is what a record set may answer for one assignment of health to its checks: count
// distinct values drawn from pool.
type allowed struct {
	pool       []string
	count      int
	lastResort bool
}

// permits reports whether values (sorted) is an answer allowed by a.
func (a allowed) permits(values []string) bool {
	if len(values) != a.count {
		return false
	}
	for i, v := range values {
		if i > 0 && values[i-1] == v {
			return false
		}
		if !slices.Contains(a.pool, v) {
			return false
		}
	}
	return true
}

// permitted is the oracle of Route 53's routing policies, written from their documented
// rules independently of package routing: what rs may answer when serving says which checks
// are served as healthy. Records without a health check are healthy. When no record the
// policy considers is healthy, every record is treated as healthy (last resort).
func permitted(rs *config.RecordSet, serving func(check string) bool) allowed {
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
		return allowed{pool: pool, count: min(len(pool), config.MaxMultivalueAnswers), lastResort: last}
	case config.PolicyWeighted:
		if pool := values(func(r config.Record) bool { return healthy(r) && weight(r) > 0 }); len(pool) > 0 {
			return allowed{pool: pool, count: 1}
		}
		if pool := values(func(r config.Record) bool { return healthy(r) && weight(r) == 0 }); len(pool) > 0 {
			return allowed{pool: pool, count: 1}
		}
		if pool := values(func(r config.Record) bool { return weight(r) > 0 }); len(pool) > 0 {
			return allowed{pool: pool, count: 1, lastResort: true}
		}
		return allowed{pool: all, count: min(1, len(all)), lastResort: true}
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
			return allowed{pool: all, count: min(1, len(all))}
		case healthy(*primary):
			return allowed{pool: []string{primary.Value}, count: 1}
		case secondary != nil && healthy(*secondary):
			return allowed{pool: []string{secondary.Value}, count: 1}
		}
		return allowed{pool: []string{primary.Value}, count: 1, lastResort: true}
	}
	return allowed{pool: all, count: len(all)}
}
