package routing

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/config"
)

// HealthState is a record's health as a selection saw it.
type HealthState uint8

// The health states of a candidate.
const (
	// HealthNoCheck: the record has no health check, so it is healthy.
	HealthNoCheck HealthState = iota
	// HealthHealthy: the record's check is served as healthy.
	HealthHealthy
	// HealthUnhealthy: the record's check is unhealthy.
	HealthUnhealthy
	// HealthIgnored: the policy does not consult health checks (simple), or does not
	// consider the record at all (a failover record that is neither primary nor secondary).
	HealthIgnored
)

// String returns the state's name, e.g. "unhealthy".
func (h HealthState) String() string {
	switch h {
	case HealthNoCheck:
		return "no-check"
	case HealthHealthy:
		return "healthy"
	case HealthUnhealthy:
		return "unhealthy"
	case HealthIgnored:
		return "ignored"
	}
	return fmt.Sprintf("health(%d)", uint8(h))
}

// MarshalText encodes the state as its name, for the status API.
func (h HealthState) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText decodes a state's name, as the status API's clients read it.
func (h *HealthState) UnmarshalText(b []byte) error {
	for s := HealthNoCheck; s <= HealthIgnored; s++ {
		if string(b) == s.String() {
			*h = s
			return nil
		}
	}
	return fmt.Errorf("routing: unknown health %q", b)
}

// Healthy reports whether the state counts as healthy before last resort.
func (h HealthState) Healthy() bool { return h == HealthNoCheck || h == HealthHealthy }

// Candidate is one record of a record set and what the selection made of it.
type Candidate struct {
	// Index is the record's position in the record set.
	Index int `json:"index"`
	// Value is the record data.
	Value string `json:"value"`
	// HealthCheck names the record's check; empty when it has none.
	HealthCheck string `json:"health_check,omitempty"`
	// Health is the record's health as the policy saw it, before any last resort.
	Health HealthState `json:"health"`
	// Eligible says the policy chose among this record: every record, except in a failover
	// set, where only the primary and the secondary are.
	Eligible bool `json:"eligible"`
	// Weight is the weight the record counts with, in a weighted set.
	Weight int `json:"weight,omitempty"`
	// Role is the record's part in a failover set: primary or secondary, empty when none.
	Role config.Role `json:"role,omitempty"`
	// Chosen says the record is in the answer.
	Chosen bool `json:"chosen"`
	// Region is the record's region, in a nearest set.
	Region string `json:"region,omitempty"`
}

// Result is a selection that explains itself: what a location answers for one record set now,
// and why.
type Result struct {
	// Policy is the record set's routing policy (simple when the set names none).
	Policy config.Policy `json:"policy"`
	// Rule is how the answer was reached.
	Rule Rule `json:"rule"`
	// LastResort says no eligible record was healthy, so all were treated as healthy.
	LastResort bool `json:"last_resort"`
	// Answer holds the indices of the answered records, in answer order.
	Answer []int `json:"answer"`
	// Candidates holds every record of the set, in the set's order: Candidates[i] is record i.
	Candidates []Candidate `json:"candidates"`
	// Fallback is the fallback record answered (rule fallback): Answer holds its index,
	// len(Candidates).
	Fallback string `json:"fallback,omitempty"`
	// Region is the region a nearest record set answered from, and RegionReason why
	// (ExplainNearest); empty for other policies.
	Region       string `json:"region,omitempty"`
	RegionReason string `json:"region_reason,omitempty"`
}

// Values returns the data of the answered records, in answer order.
func (r Result) Values() []string {
	vs := make([]string, 0, len(r.Answer))
	for _, i := range r.Answer {
		if i < len(r.Candidates) {
			vs = append(vs, r.Candidates[i].Value)
		} else {
			vs = append(vs, r.Fallback)
		}
	}
	return vs
}

// AnsweringFrom returns the records the set answers from now, whatever the random draw: the
// failover answer, or the eligible records of any other policy that are not unhealthy (every
// eligible one under last resort, and every one of a simple set), sorted. A weighted or
// multivalue set's draws change the answer, not what it answers from.
func (r Result) AnsweringFrom() []string {
	if r.Policy == config.PolicyFailover {
		return r.Values()
	}
	var values []string
	for _, c := range r.Candidates {
		if c.Eligible && (r.LastResort || c.Health != HealthUnhealthy) {
			values = append(values, c.Value)
		}
	}
	slices.Sort(values)
	return values
}

// FailOpen returns what AnsweringFrom gives for the set when every record is healthy, as a
// location answers before its first verdict: the primary of a failover set, every eligible
// record of any other, sorted.
func (r Result) FailOpen() []string {
	var values []string
	for _, c := range r.Candidates {
		if c.Eligible && (r.Policy != config.PolicyFailover || c.Role == config.RolePrimary) {
			values = append(values, c.Value)
		}
	}
	slices.Sort(values)
	return values
}

// String summarises the result on one line, e.g.
// "failover last-resort: 192.0.2.1 (primary unhealthy, secondary unhealthy)".
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s (", r.Policy, r.Rule, strings.Join(r.Values(), " "))
	first := true
	for _, c := range r.Candidates {
		if !c.Eligible {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		name := c.Value
		if c.Role != "" {
			name = string(c.Role)
		}
		fmt.Fprintf(&b, "%s %s", name, c.Health)
	}
	b.WriteString(")")
	return b.String()
}

// Explain chooses like Select, with the same answer for the same inputs, and returns the
// choice with its explanation. It asks health about each record's check once, so the
// explanation and the answer agree even while verdicts change. It is not for the hot path: it
// allocates the Result.
func Explain(rs *config.RecordSet, health Health, rnd uint64) (Result, error) {
	if rs == nil {
		return Result{Policy: config.PolicySimple, Rule: RuleNoRecords, Answer: []int{}, Candidates: []Candidate{}}, nil
	}
	if err := checkPolicy(rs.Policy); err != nil {
		return Result{}, err
	}
	policy := rs.Policy
	if policy == "" {
		policy = config.PolicySimple
	}
	recs := rs.Records
	cands := make([]Candidate, len(recs))
	p, s := -1, -1
	if policy == config.PolicyFailover && len(recs) > 0 {
		p, s = failoverPair(recs)
	}
	for i := range recs {
		r := &recs[i]
		c := Candidate{Index: i, Value: r.Value, HealthCheck: r.HealthCheck, Eligible: true}
		switch policy {
		case config.PolicyWeighted:
			c.Weight = int(weight(r))
		case config.PolicyFailover:
			switch i {
			case p:
				c.Role = config.RolePrimary
			case s:
				c.Role = config.RoleSecondary
			default:
				c.Eligible = false
			}
		}
		switch {
		case policy == config.PolicySimple || !c.Eligible:
			c.Health = HealthIgnored
		case r.HealthCheck == "":
			c.Health = HealthNoCheck
		case serve(health, r):
			c.Health = HealthHealthy
		default:
			c.Health = HealthUnhealthy
		}
		cands[i] = c
	}
	answer, rule, err := choose(rs.Policy, recs, func(i int) bool { return cands[i].Health.Healthy() }, rnd, make([]int, 0, len(recs)+1))
	if err != nil {
		return Result{}, err
	}
	answer, rule = noHealthy(rs, answer, rule)
	res := Result{Policy: policy, Rule: rule, LastResort: rule.LastResort(), Answer: answer, Candidates: cands}
	for _, i := range answer {
		if i < len(cands) {
			cands[i].Chosen = true
		} else {
			res.Fallback = rs.Fallback
		}
	}
	return res, nil
}
