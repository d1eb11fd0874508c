package quorum

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// fuzzReports decodes reports from data, three bytes each: checker, flags and age. Flags: bit 0
// healthy, bit 2 never heard (bit 1 is unused); the age is a signed number of seconds before now
// (negative: progress "in the future", as after the location's clock went back).
func fuzzReports(data []byte, now time.Time) []Report {
	var rs []Report
	for i := 0; i+3 <= len(data) && len(rs) < 64; i += 3 {
		id, flags, age := data[i], data[i+1], int8(data[i+2])
		r := Report{
			Checker:      "c" + strconv.Itoa(int(id%16)),
			Region:       "r" + strconv.Itoa(int(id%3)),
			Healthy:      flags&1 != 0,
			Sequence:     uint64(i),
			LastProgress: now.Add(-time.Duration(age) * time.Second),
		}
		if flags&4 != 0 {
			r.LastProgress = time.Time{}
		}
		rs = append(rs, r)
	}
	return rs
}

// FuzzEvaluate checks Evaluate's invariants on arbitrary reports, policies and histories: no
// panic; counts add up; a stale report never counts (flipping its status changes
// nothing); the state agrees with the counts; Explain agrees with Evaluate and marshals.
// Seeds are in testdata/fuzz/FuzzEvaluate.
func FuzzEvaluate(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, threshold float64, minReporters int, freshness, hold int64,
		flags uint8, nowSec int32, prevState uint8, prevHeldSec int32) {
		now := t0.Add(time.Duration(nowSec) * time.Second)
		rs := fuzzReports(data, now)
		p := Policy{
			HealthyThreshold: threshold,
			MinReporters:     minReporters,
			FreshnessWindow:  time.Duration(freshness),
			Hold:             time.Duration(hold),
			Inverted:         flags&1 != 0,
			Disabled:         flags&2 != 0,
		}
		var expected []string
		for i := range int(flags >> 4) {
			expected = append(expected, "c"+strconv.Itoa(i*3%20))
		}
		prev := Verdict{State: State(prevState % 3)}
		if flags&4 != 0 {
			prev.Since = t0
			prev.HeldSince = now.Add(-time.Duration(prevHeldSec) * time.Second)
		}

		v := Evaluate(p, rs, expected, prev, now)
		np := p.Normalize()
		c := v.Counts

		// Counts add up.
		if c.Fresh != c.Healthy+c.Unhealthy || c.Fresh+c.Stale != len(rs) {
			t.Fatalf("counts do not add up over %d reports: %+v", len(rs), c)
		}
		if c.NeverHeard < 0 || c.NeverHeard > len(expected) {
			t.Fatalf("never heard %d of %d expected", c.NeverHeard, len(expected))
		}
		// Stale reports never count: flipping what they say changes nothing.
		flipped := append([]Report(nil), rs...)
		stale := 0
		for i := range flipped {
			r := &flipped[i]
			age := now.Sub(r.LastProgress)
			if r.LastProgress.IsZero() || age > np.FreshnessWindow {
				stale++
				r.Healthy = !r.Healthy
			}
		}
		if stale != c.Stale {
			t.Fatalf("%d reports older than the window, verdict counts %d stale", stale, c.Stale)
		}
		if w := Evaluate(p, flipped, expected, prev, now); w != v {
			t.Fatalf("flipping uncounted reports changed the verdict:\n%+v\n%+v", v, w)
		}
		// The state agrees with the counts.
		switch {
		case np.Disabled:
			if v.State != StateHealthy || v.Rule != RuleDisabled {
				t.Fatalf("disabled: %+v", v)
			}
		case c.Fresh >= np.MinReporters:
			raw := float64(c.Healthy)/float64(c.Fresh) > np.HealthyThreshold
			if raw == np.Inverted && v.State != StateUnhealthy || raw != np.Inverted && v.State != StateHealthy {
				t.Fatalf("%d of %d healthy, threshold %v, inverted %v: %s", c.Healthy, c.Fresh, np.HealthyThreshold, np.Inverted, v.State)
			}
		default:
			if v.HeldSince.IsZero() || v.HeldSince.After(now) {
				t.Fatalf("short of reports without a sane start: %+v", v)
			}
			switch v.State {
			case StateUnknown:
			case prev.State:
				if !v.Held() || now.Sub(v.HeldSince) >= np.Hold {
					t.Fatalf("held beyond the hold: %+v", v)
				}
			default:
				t.Fatalf("short of reports, state %s is neither held (%s) nor unknown", v.State, prev.State)
			}
		}
		if v.State != prev.State && !v.Since.Equal(now) || v.Since.After(now) && !v.Since.Equal(prev.Since) {
			t.Fatalf("since %v at %v after %+v", v.Since, now, prev)
		}
		// Explain agrees and marshals.
		e := Explain(p, rs, expected, prev, now)
		if e.State != v.State || e.Counts != c || e.Sentence != v.Sentence() || len(e.Votes) != len(rs) || len(e.NeverHeard) != c.NeverHeard {
			t.Fatalf("explanation disagrees: %+v vs %+v", e, v)
		}
		for i, vote := range e.Votes {
			if vote.Counted != (vote.Status == VoteHealthy || vote.Status == VoteUnhealthy) || vote.Checker != rs[i].Checker {
				t.Fatalf("vote %d: %+v", i, vote)
			}
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("explanation does not marshal: %v", err)
		}
	})
}
