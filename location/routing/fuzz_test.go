package routing

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// fuzzPolicies returns the policies a fuzz input picks from: the known ones, the empty default
// and two that must be refused.
func fuzzPolicies() []config.Policy {
	return []config.Policy{
		config.PolicySimple, "", config.PolicyWeighted, config.PolicyMultivalue, config.PolicyFailover,
		"geolocation", "Weighted",
	}
}

// fuzzSet builds a record set from fuzz bytes: three bytes a record, at most 64 records.
// Byte 0 is the weight; byte 1 holds flags (bit 0: has a check; bits 1–2: role none, primary,
// secondary or an unknown one; bit 3: no weight; bit 4: negative weight; bit 5: weight ×100);
// byte 2 chooses one of eight checks, so records may share a check.
func fuzzSet(policy uint8, spec []byte) *config.RecordSet {
	rs := &config.RecordSet{Name: "fuzz.vigil.test.", Type: config.TypeA,
		Policy: fuzzPolicies()[int(policy)%len(fuzzPolicies())]}
	for i := 0; i+3 <= len(spec) && len(rs.Records) < 64; i += 3 {
		w, flags, check := int(spec[i]), spec[i+1], spec[i+2]
		r := config.Record{Value: fmt.Sprintf("10.0.%d.%d", i/256, i%256)}
		if flags&1 != 0 {
			r.HealthCheck = fmt.Sprintf("c%d", check%8)
		}
		r.Role = []config.Role{"", config.RolePrimary, config.RoleSecondary, "tertiary"}[(flags>>1)&3]
		switch {
		case flags&8 != 0:
		case flags&16 != 0:
			w = -w
			r.Weight = &w
		case flags&32 != 0:
			w *= 100
			r.Weight = &w
		default:
			r.Weight = &w
		}
		rs.Records = append(rs.Records, r)
	}
	return rs
}

// fuzzHealth says check c<n> is down when bit n of mask is set.
func fuzzHealth(mask uint8) Health {
	return func(id string) bool {
		var n int
		if _, err := fmt.Sscanf(id, "c%d", &n); err != nil || n < 0 || n > 7 {
			panic("fuzz: unexpected check " + id)
		}
		return mask&(1<<n) == 0
	}
}

func FuzzSelect(f *testing.F) {
	f.Add(uint8(2), []byte{10, 1, 0, 20, 1, 1, 0, 0, 0}, uint8(3), uint64(1))
	f.Add(uint8(3), []byte{0, 1, 0, 0, 1, 1, 0, 1, 2, 0, 1, 3, 0, 1, 4, 0, 1, 5, 0, 1, 6, 0, 1, 7, 0, 0, 0, 0, 0, 0}, uint8(0x0f), uint64(99))
	f.Add(uint8(4), []byte{0, 3, 0, 0, 5, 1}, uint8(3), uint64(0))
	f.Add(uint8(5), []byte{1, 0, 0}, uint8(0), uint64(0))
	f.Fuzz(func(t *testing.T, policy uint8, spec []byte, mask uint8, rnd uint64) {
		rs := fuzzSet(policy, spec)
		health := fuzzHealth(mask)
		if err := checkSelection(rs, health, rnd); err != nil {
			t.Fatalf("%v\nrecord set: %+v\nhealth mask %08b, draw %d", err, *rs, mask, rnd)
		}
	})
}

// checkSelection checks every property a selection must have, for any input.
func checkSelection(rs *config.RecordSet, health Health, rnd uint64) error {
	known := slices.Contains(fuzzPolicies()[:5], rs.Policy)
	idx, rule, err := Select(rs, health, rnd, nil)
	res, xerr := Explain(rs, health, rnd)
	if !known {
		if err == nil || xerr == nil {
			return fmt.Errorf("policy %q accepted", rs.Policy)
		}
		return nil
	}
	if err != nil || xerr != nil {
		return fmt.Errorf("policy %q refused: %v, %v", rs.Policy, err, xerr)
	}
	if !slices.Equal(idx, res.Answer) || rule != res.Rule || rule.LastResort() != res.LastResort {
		return fmt.Errorf("Select %v %v, Explain %v %v", idx, rule, res.Answer, res.Rule)
	}
	n := len(rs.Records)
	if (n == 0) != (len(idx) == 0) {
		return fmt.Errorf("answer %v for %d records", idx, n)
	}
	// The answer is a subset of the records.
	seen := map[int]bool{}
	for _, i := range idx {
		if i < 0 || i >= n || seen[i] {
			return fmt.Errorf("answer %v is not a set of record indices", idx)
		}
		seen[i] = true
	}
	// Each candidate's health is the record's: its check's, or healthy without one.
	anyHealthy, eligible := false, 0
	for i, c := range res.Candidates {
		r := rs.Records[i]
		want := HealthIgnored
		switch {
		case res.Policy == config.PolicySimple || !c.Eligible:
		case r.HealthCheck == "":
			want = HealthNoCheck
		case health(r.HealthCheck):
			want = HealthHealthy
		default:
			want = HealthUnhealthy
		}
		if c.Health != want || c.Chosen != seen[i] {
			return fmt.Errorf("candidate %d: %+v, want health %v, chosen %v", i, c, want, seen[i])
		}
		if c.Eligible {
			eligible++
			anyHealthy = anyHealthy || c.Health.Healthy()
		} else if c.Chosen {
			return fmt.Errorf("ineligible candidate %d answered", i)
		}
	}
	if n == 0 {
		return nil
	}
	// Last resort if and only if no eligible record is healthy; an answer outside last resort
	// holds healthy records only.
	if res.Policy != config.PolicySimple && res.LastResort == anyHealthy {
		return fmt.Errorf("last resort %v, but a healthy eligible record: %v", res.LastResort, anyHealthy)
	}
	for _, i := range idx {
		if !res.LastResort && res.Policy != config.PolicySimple && !res.Candidates[i].Health.Healthy() {
			return fmt.Errorf("unhealthy record %d answered outside last resort", i)
		}
	}
	switch res.Policy {
	case config.PolicySimple:
		if res.LastResort || len(idx) != n {
			return fmt.Errorf("simple answered %v, last resort %v", idx, res.LastResort)
		}
	case config.PolicyWeighted:
		return checkWeighted(res)
	case config.PolicyMultivalue:
		healthy := 0
		for _, c := range res.Candidates {
			if c.Health.Healthy() {
				healthy++
			}
		}
		if res.LastResort {
			healthy = n
		}
		if len(idx) != min(healthy, config.MaxMultivalueAnswers) {
			return fmt.Errorf("multivalue answered %d records of %d healthy", len(idx), healthy)
		}
	case config.PolicyFailover:
		return checkFailover(rs, res, eligible)
	}
	return nil
}

// checkWeighted checks that a weighted answer is one record, of the right weight class.
func checkWeighted(res Result) error {
	if len(res.Answer) != 1 {
		return fmt.Errorf("weighted answered %v", res.Answer)
	}
	c := res.Candidates[res.Answer[0]]
	healthyNonZero, anyNonZero := false, false
	for _, o := range res.Candidates {
		anyNonZero = anyNonZero || o.Weight > 0
		healthyNonZero = healthyNonZero || o.Weight > 0 && o.Health.Healthy()
	}
	switch {
	case (healthyNonZero || res.LastResort && anyNonZero) && c.Weight == 0:
		return fmt.Errorf("zero-weight record answered while a non-zero weight one was eligible")
	case res.Rule == RuleZeroWeight && (healthyNonZero || c.Weight != 0):
		return fmt.Errorf("zero-weight rule with a healthy non-zero weight record")
	}
	return nil
}

// checkFailover checks that a failover answer is one of at most two eligible records, and for a
// valid set (one primary, at most one secondary, nothing else), exactly the documented one.
func checkFailover(rs *config.RecordSet, res Result, eligible int) error {
	if len(res.Answer) != 1 || eligible < 1 || eligible > 2 {
		return fmt.Errorf("failover answered %v among %d eligible", res.Answer, eligible)
	}
	p, s := -1, -1
	for i, r := range rs.Records {
		switch {
		case r.Role == config.RolePrimary && p < 0:
			p = i
		case r.Role == config.RoleSecondary && s < 0:
			s = i
		default:
			return nil // not a valid failover set: the general properties suffice
		}
	}
	if p < 0 {
		return nil
	}
	healthy := func(i int) bool { return res.Candidates[i].Health.Healthy() }
	want, lastResort := p, false
	switch {
	case healthy(p):
	case s >= 0 && healthy(s):
		want = s
	default:
		lastResort = true
	}
	if res.Answer[0] != want || res.LastResort != lastResort {
		return fmt.Errorf("failover answered %d (last resort %v), want %d (%v)", res.Answer[0], res.LastResort, want, lastResort)
	}
	return nil
}
