package routing

import "github.com/vigil-dns/vigil/config"

// The rules of a record set whose records are all unhealthy and that does not answer them
// all (config.RecordSet.NoHealthy). Their values stand apart from the policies' rules.
const (
	// RuleNoData: no record is healthy and the set answers no data.
	RuleNoData Rule = 100
	// RuleFallback: no record is healthy and the set answers its fallback record, whose
	// index is len(rs.Records).
	RuleFallback Rule = 101
)

// NoHealthy reports whether the rule was reached with no healthy record: last resort, no
// data or the fallback.
func (r Rule) NoHealthy() bool { return r == RuleLastResort || r == RuleNoData || r == RuleFallback }

// noHealthy applies rs's choice for a selection that found no healthy record: with the
// default it keeps the last resort's answer; with nodata it answers nothing; with fallback
// it answers index len(rs.Records), the fallback record.
func noHealthy(rs *config.RecordSet, idx []int, rule Rule) ([]int, Rule) {
	if rule != RuleLastResort {
		return idx, rule
	}
	switch rs.NoHealthy {
	case config.NoHealthyNoData:
		return idx[:0], RuleNoData
	case config.NoHealthyFallback:
		if rs.Fallback != "" {
			return append(idx[:0], len(rs.Records)), RuleFallback
		}
	}
	return idx, rule
}
