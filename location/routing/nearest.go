package routing

import (
	"fmt"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// The rules of a nearest record set.
const (
	// RuleOwnRegion: a nearest record set answers the healthy records of the location's own
	// region.
	RuleOwnRegion Rule = 64 + iota
	// RuleNextRegion: the location's own region has no healthy record (or none at all); a
	// nearest record set answers the healthy records of the nearest region that has one.
	RuleNextRegion
)

// nearestRuleName names the rules of this file, for Rule.String.
func nearestRuleName(r Rule) (string, bool) {
	switch r {
	case RuleOwnRegion:
		return "own-region", true
	case RuleNextRegion:
		return "next-region", true
	}
	return "", false
}

// Locality is where a location stands, for the nearest policy: its own region, and the
// other regions from the nearest on. Regions of records that Order does not list come after
// those it does, in the order the record set first names them.
type Locality struct {
	// Region is the location's own region.
	Region string
	// Order lists other regions, nearest first.
	Order []string
	// RTT is the round-trip time the location measured to each region, for explanations;
	// it may be empty.
	RTT map[string]time.Duration
}

// regions returns the regions a nearest answer tries, in order: the own region, Order, then
// the regions of recs not yet listed.
func (l *Locality) regions(recs []config.Record) []string {
	var out []string
	if l != nil {
		if l.Region != "" {
			out = append(out, l.Region)
		}
		for _, r := range l.Order {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	for i := range recs {
		if !slices.Contains(out, recs[i].Region) {
			out = append(out, recs[i].Region)
		}
	}
	return out
}

// SelectNearest chooses the records of a nearest record set for a location at loc (nil: no
// region of its own, the record set's order of regions), like Select: the healthy records of
// the first region in loc's order that has one, at most config.MaxMultivalueAnswers of them
// in the set's order; when no record is healthy, every record of the first region that has
// records (last resort). It returns the indices in rs.Records and the rule.
func SelectNearest(rs *config.RecordSet, health Health, loc *Locality, buf []int) ([]int, Rule) {
	if rs == nil || len(rs.Records) == 0 {
		return buf[:0], RuleNoRecords
	}
	recs := rs.Records
	idx, rule, _ := chooseNearest(recs, func(i int) bool { return serve(health, &recs[i]) }, loc, buf)
	return idx, rule
}

// chooseNearest is SelectNearest on records whose health healthy(i) gives; it also returns
// the region answered from.
func chooseNearest(recs []config.Record, healthy func(int) bool, loc *Locality, buf []int) ([]int, Rule, string) {
	buf = buf[:0]
	if len(recs) == 0 {
		return buf, RuleNoRecords, ""
	}
	order := loc.regions(recs)
	for n, region := range order {
		for i := range recs {
			if recs[i].Region == region && healthy(i) && len(buf) < config.MaxMultivalueAnswers {
				buf = append(buf, i)
			}
		}
		if len(buf) > 0 {
			if n == 0 && loc != nil && region == loc.Region {
				return buf, RuleOwnRegion, region
			}
			return buf, RuleNextRegion, region
		}
	}
	for _, region := range order {
		for i := range recs {
			if recs[i].Region == region && len(buf) < config.MaxMultivalueAnswers {
				buf = append(buf, i)
			}
		}
		if len(buf) > 0 {
			return buf, RuleLastResort, region
		}
	}
	return buf, RuleNoRecords, ""
}

// ExplainNearest chooses like SelectNearest and explains it: Explain's result (every
// candidate with its health), the answer for loc, and in Region and RegionReason which
// region answered and why.
func ExplainNearest(rs *config.RecordSet, health Health, loc *Locality) (Result, error) {
	res, err := Explain(rs, health, 0)
	if err != nil || rs == nil || len(rs.Records) == 0 {
		return res, err
	}
	answer, rule, region := chooseNearest(rs.Records, func(i int) bool { return res.Candidates[i].Health.Healthy() }, loc, nil)
	for i := range res.Candidates {
		res.Candidates[i].Chosen = slices.Contains(answer, i)
		res.Candidates[i].Region = rs.Records[i].Region
	}
	res.Answer, res.Rule, res.LastResort = answer, rule, rule.LastResort()
	res.Region = region
	res.RegionReason = regionReason(rs.Records, res.Candidates, loc, rule, region)
	return res, nil
}

// regionReason says why region answered.
func regionReason(recs []config.Record, cands []Candidate, loc *Locality, rule Rule, region string) string {
	own := ""
	if loc != nil {
		own = loc.Region
	}
	rtt := func(r string) string {
		if loc != nil {
			if d, ok := loc.RTT[r]; ok {
				return fmt.Sprintf(", measured round trip %v", d.Round(time.Millisecond))
			}
		}
		return ""
	}
	count := func(r string) (healthy, all int) {
		for i := range recs {
			if recs[i].Region == r {
				all++
				if cands[i].Health.Healthy() {
					healthy++
				}
			}
		}
		return
	}
	switch rule {
	case RuleOwnRegion:
		h, _ := count(region)
		return fmt.Sprintf("%s is this location's own region and has %d healthy record(s)", region, h)
	case RuleNextRegion:
		h, _ := count(region)
		why := "this location has no region of its own"
		if own != "" {
			if _, all := count(own); all == 0 {
				why = fmt.Sprintf("this location's region %s has no record", own)
			} else {
				why = fmt.Sprintf("this location's region %s has no healthy record", own)
			}
		}
		return fmt.Sprintf("%s; %s is the nearest region with %d healthy record(s)%s", why, region, h, rtt(region))
	case RuleLastResort:
		return fmt.Sprintf("no region has a healthy record: last resort, every record of %s, the nearest region with records%s", region, rtt(region))
	}
	return ""
}
