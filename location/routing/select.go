package routing

import (
	"fmt"

	"github.com/vigil-dns/vigil/config"
)

// MaxWeight is the largest weight a record counts with; larger weights (which validation
// rejects) count as MaxWeight and negative ones as zero.
const MaxWeight = 255

// Health reports whether the check named checkID is to be served as healthy. The caller maps
// verdicts onto it; an unknown verdict is served as healthy (fail open). Records without a
// health check are healthy and never reach it; a nil Health treats every check as healthy.
type Health func(checkID string) bool

// Rule is how a selection reached its answer.
type Rule uint8

// The rules a selection applies.
const (
	// RuleNoRecords: the record set is empty; the answer is empty.
	RuleNoRecords Rule = iota
	// RuleAll: a simple record set answers every record; health checks are not consulted.
	RuleAll
	// RuleHealthy: a multivalue record set answers its healthy records, a random
	// config.MaxMultivalueAnswers of them when more are healthy.
	RuleHealthy
	// RuleWeighted: a weighted record set answers one healthy record with a non-zero weight,
	// chosen with probability proportional to its weight.
	RuleWeighted
	// RuleZeroWeight: a weighted record set has no healthy record with a non-zero weight (or
	// every weight is zero); it answers one healthy zero-weight record, each equally likely.
	RuleZeroWeight
	// RulePrimary: a failover record set answers its healthy primary.
	RulePrimary
	// RuleSecondary: a failover record set answers its healthy secondary, the primary being
	// unhealthy.
	RuleSecondary
	// RuleLastResort: no record the policy considers is healthy, so every one is treated as
	// healthy and the policy applied again; a failover set answers its primary.
	RuleLastResort
)

// String returns the rule's name, e.g. "last-resort".
func (r Rule) String() string {
	switch r {
	case RuleNoRecords:
		return "no-records"
	case RuleAll:
		return "all"
	case RuleHealthy:
		return "healthy"
	case RuleWeighted:
		return "weighted"
	case RuleZeroWeight:
		return "zero-weight"
	case RulePrimary:
		return "primary"
	case RuleSecondary:
		return "secondary"
	case RuleLastResort:
		return "last-resort"
	case RuleNoData:
		return "no-data"
	case RuleFallback:
		return "fallback"
	}
	if name, ok := nearestRuleName(r); ok {
		return name
	}
	return fmt.Sprintf("rule(%d)", uint8(r))
}

// MarshalText encodes the rule as its name, for the status API.
func (r Rule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// LastResort reports whether the answer was given in last resort: no record was healthy.
func (r Rule) LastResort() bool { return r == RuleLastResort }

// Select chooses the records to answer from rs, by its policy and the health of its checks,
// and returns their indices in rs.Records, in answer order. rnd is a uniformly random value
// drawn for this query; the same inputs always give the same answer.
//
// The indices are written into buf's storage: with cap(buf) >= len(rs.Records), Select
// allocates nothing. The error is not nil only for a policy Select does not know (an empty
// policy is simple). A record set with records gets an empty answer only when none is
// healthy and it chose no data then (config.NoHealthyNoData); with a fallback, the answer is
// index len(rs.Records), which names rs.Fallback.
func Select(rs *config.RecordSet, health Health, rnd uint64, buf []int) ([]int, Rule, error) {
	if rs == nil {
		return buf[:0], RuleNoRecords, nil
	}
	recs := rs.Records
	idx, rule, err := choose(rs.Policy, recs, func(i int) bool { return serve(health, &recs[i]) }, rnd, buf)
	idx, rule = noHealthy(rs, idx, rule)
	return idx, rule, err
}

// serve reports whether record r is served as healthy: it has no check, or health says so.
func serve(health Health, r *config.Record) bool {
	return r.HealthCheck == "" || health == nil || health(r.HealthCheck)
}

// weight returns the weight record r counts with in a weighted record set.
func weight(r *config.Record) uint64 {
	switch {
	case r.Weight == nil || *r.Weight <= 0:
		return 0
	case *r.Weight > MaxWeight:
		return MaxWeight
	}
	return uint64(*r.Weight)
}

// checkPolicy returns an error for a policy this package does not know; empty is simple.
func checkPolicy(policy config.Policy) error {
	switch policy {
	case config.PolicySimple, "", config.PolicyWeighted, config.PolicyMultivalue, config.PolicyFailover, config.PolicyNearest:
		return nil
	}
	return fmt.Errorf("routing: unknown policy %q", policy)
}

// choose applies policy to recs; healthy(i) is the health of recs[i], asked at most once per
// record and only when the policy needs it.
func choose(policy config.Policy, recs []config.Record, healthy func(int) bool, rnd uint64, buf []int) ([]int, Rule, error) {
	buf = buf[:0]
	if err := checkPolicy(policy); err != nil {
		return buf, RuleNoRecords, err
	}
	if len(recs) == 0 {
		return buf, RuleNoRecords, nil
	}
	switch policy {
	case config.PolicyWeighted:
		return chooseWeighted(recs, healthy, stream(rnd), buf)
	case config.PolicyMultivalue:
		return chooseMultivalue(recs, healthy, stream(rnd), buf)
	case config.PolicyFailover:
		return chooseFailover(recs, healthy, buf)
	case config.PolicyNearest:
		// Without a locality (SelectNearest's), the record set's order of regions.
		idx, rule, _ := chooseNearest(recs, healthy, nil, buf)
		return idx, rule, nil
	}
	for i := range recs {
		buf = append(buf, i)
	}
	return buf, RuleAll, nil
}

// chooseWeighted answers one record: by weight among the healthy non-zero-weight records;
// else with equal probability among the healthy zero-weight records; else, in last resort, by
// weight among all non-zero-weight records, or equally among all when every weight is zero.
func chooseWeighted(recs []config.Record, healthy func(int) bool, s stream, buf []int) ([]int, Rule, error) {
	buf, total, rule := weightedPool(recs, healthy, buf)
	if total > 0 {
		return pickWeighted(recs, buf, total, s.next()), rule, nil
	}
	return pickOne(buf, s.next()), rule, nil
}

// weightedPool returns the records a weighted answer picks one of, in buf, with the sum of
// their weights (zero when each is equally likely) and the rule: the healthy non-zero-weight
// records; else the healthy zero-weight records; else, in last resort, every non-zero-weight
// record, or every record when every weight is zero. recs is not empty.
func weightedPool(recs []config.Record, healthy func(int) bool, buf []int) ([]int, uint64, Rule) {
	var total uint64
	for i := range recs {
		if w := weight(&recs[i]); w > 0 && healthy(i) {
			buf = append(buf, i)
			total += w
		}
	}
	if len(buf) > 0 {
		return buf, total, RuleWeighted
	}
	for i := range recs {
		if weight(&recs[i]) == 0 && healthy(i) {
			buf = append(buf, i)
		}
	}
	if len(buf) > 0 {
		return buf, 0, RuleZeroWeight
	}
	for i := range recs {
		if w := weight(&recs[i]); w > 0 {
			buf = append(buf, i)
			total += w
		}
	}
	if len(buf) > 0 {
		return buf, total, RuleLastResort
	}
	for i := range recs {
		buf = append(buf, i)
	}
	return buf, 0, RuleLastResort
}

// pickWeighted keeps, in buf[0], one of the records indexed by buf, chosen with probability
// weight/total; total is the sum of their weights and is not zero.
func pickWeighted(recs []config.Record, buf []int, total, x uint64) []int {
	point := below(x, total)
	for _, i := range buf {
		w := weight(&recs[i])
		if point < w {
			buf[0] = i
			return buf[:1]
		}
		point -= w
	}
	// Unreachable while total is the sum of the weights; keep the answer non-empty anyway.
	return buf[:1]
}

// pickOne keeps, in buf[0], one of buf's elements, each equally likely; buf is not empty.
func pickOne(buf []int, x uint64) []int {
	buf[0] = buf[below(x, uint64(len(buf)))]
	return buf[:1]
}

// chooseMultivalue answers the healthy records, or all records in last resort, at most
// config.MaxMultivalueAnswers of them, as a uniformly random sample in random order.
func chooseMultivalue(recs []config.Record, healthy func(int) bool, s stream, buf []int) ([]int, Rule, error) {
	buf, rule := multivaluePool(recs, healthy, buf)
	n := len(buf)
	k := min(n, config.MaxMultivalueAnswers)
	// A partial Fisher–Yates shuffle: after step i, buf[:i+1] is a uniform sample in
	// uniformly random order.
	for i := range k {
		j := i + int(below(s.next(), uint64(n-i)))
		buf[i], buf[j] = buf[j], buf[i]
	}
	return buf[:k], rule, nil
}

// multivaluePool returns the records a multivalue answer samples, in buf: the healthy ones,
// or every record in last resort.
func multivaluePool(recs []config.Record, healthy func(int) bool, buf []int) ([]int, Rule) {
	for i := range recs {
		if healthy(i) {
			buf = append(buf, i)
		}
	}
	if len(buf) > 0 {
		return buf, RuleHealthy
	}
	for i := range recs {
		buf = append(buf, i)
	}
	return buf, RuleLastResort
}

// chooseFailover answers the primary if healthy, else the secondary if there is one and it is
// healthy, else the primary in last resort.
func chooseFailover(recs []config.Record, healthy func(int) bool, buf []int) ([]int, Rule, error) {
	p, s := failoverPair(recs)
	switch {
	case healthy(p):
		return append(buf, p), RulePrimary, nil
	case s >= 0 && healthy(s):
		return append(buf, s), RuleSecondary, nil
	}
	return append(buf, p), RuleLastResort, nil
}

// failoverPair returns the indices of the primary and the secondary of a failover record set
// with at least one record; s is -1 when there is no secondary. A valid set has one primary
// and at most one secondary. Otherwise, so that any input gets an answer: the first of each
// role counts; without a primary, the first record without the secondary role stands in,
// and failing that the secondary becomes the primary.
func failoverPair(recs []config.Record) (p, s int) {
	p, s = -1, -1
	for i := range recs {
		switch recs[i].Role {
		case config.RolePrimary:
			if p < 0 {
				p = i
			}
		case config.RoleSecondary:
			if s < 0 {
				s = i
			}
		}
	}
	if p < 0 {
		for i := range recs {
			if recs[i].Role != config.RoleSecondary {
				p = i
				break
			}
		}
	}
	if p < 0 {
		p, s = s, -1
	}
	return p, s
}
