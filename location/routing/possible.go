package routing

import (
	"slices"

	"github.com/vigil-dns/vigil/config"
)

// Possible is every answer a selection could give for one record set and one state of health,
// whatever its random draw: an answer holds Size distinct records, all of them in Pool. For
// simple and failover sets there is one possible answer, and Size is len(Pool).
type Possible struct {
	// Pool holds the indices of the records an answer is drawn from, in the set's order
	// (len(rs.Records) names the set's fallback record, rule fallback).
	Pool []int
	// Size is how many records an answer holds.
	Size int
	// Rule is the rule every such answer is given by.
	Rule Rule
}

// Possibilities returns what Select may answer for rs under health, for any random draw: the
// measure an answer seen on the wire is checked against. The error is Select's.
func Possibilities(rs *config.RecordSet, health Health) (Possible, error) {
	if rs == nil || len(rs.Records) == 0 {
		if rs != nil {
			if err := checkPolicy(rs.Policy); err != nil {
				return Possible{}, err
			}
		}
		return Possible{Pool: []int{}, Rule: RuleNoRecords}, nil
	}
	recs := rs.Records
	healthy := func(i int) bool { return serve(health, &recs[i]) }
	var p Possible
	switch rs.Policy {
	case config.PolicyWeighted:
		p.Pool, _, p.Rule = weightedPool(recs, healthy, nil)
		p.Size = 1
	case config.PolicyMultivalue:
		p.Pool, p.Rule = multivaluePool(recs, healthy, nil)
		p.Size = min(len(p.Pool), config.MaxMultivalueAnswers)
	default:
		pool, rule, err := choose(rs.Policy, recs, healthy, 0, nil)
		if err != nil {
			return Possible{}, err
		}
		p.Pool, p.Size, p.Rule = pool, len(pool), rule
	}
	if pool, rule := noHealthy(rs, p.Pool, p.Rule); rule != p.Rule {
		p.Pool, p.Rule, p.Size = pool, rule, len(pool)
	}
	slices.Sort(p.Pool)
	return p, nil
}
