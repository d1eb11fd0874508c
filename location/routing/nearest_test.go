package routing

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// nearestSet has two records in us-east, one in eu-west and one in sa-east.
func nearestSet() *config.RecordSet {
	return &config.RecordSet{Name: "www", Type: config.TypeA, Policy: config.PolicyNearest, Records: []config.Record{
		{Value: "192.0.2.1", HealthCheck: "us1", Region: "us-east"},
		{Value: "192.0.2.2", HealthCheck: "us2", Region: "us-east"},
		{Value: "198.51.100.1", HealthCheck: "eu", Region: "eu-west"},
		{Value: "203.0.113.1", HealthCheck: "sa", Region: "sa-east"},
	}}
}

func TestNearest(t *testing.T) {
	rtt := map[string]time.Duration{"eu-west": 80 * time.Millisecond, "sa-east": 120 * time.Millisecond}
	fromUS := &Locality{Region: "us-east", Order: []string{"eu-west", "sa-east"}, RTT: rtt}
	fromSA := &Locality{Region: "sa-east", Order: []string{"us-east", "eu-west"}}
	fromAP := &Locality{Region: "ap-south", Order: []string{"sa-east"}}
	for _, c := range []struct {
		name   string
		loc    *Locality
		down   []string
		want   []string
		rule   Rule
		region string
		reason string
	}{
		{"own region, both healthy", fromUS, nil, []string{"192.0.2.1", "192.0.2.2"}, RuleOwnRegion, "us-east", "us-east is this location's own region and has 2 healthy"},
		{"own region, one healthy", fromUS, []string{"us1"}, []string{"192.0.2.2"}, RuleOwnRegion, "us-east", "has 1 healthy"},
		{"own region down: the next", fromUS, []string{"us1", "us2"}, []string{"198.51.100.1"}, RuleNextRegion, "eu-west", "region us-east has no healthy record; eu-west is the nearest region with 1 healthy record(s), measured round trip 80ms"},
		{"two down: the one after", fromUS, []string{"us1", "us2", "eu"}, []string{"203.0.113.1"}, RuleNextRegion, "sa-east", "sa-east is the nearest"},
		{"none healthy: last resort in the own region", fromUS, []string{"us1", "us2", "eu", "sa"}, []string{"192.0.2.1", "192.0.2.2"}, RuleLastResort, "us-east", "last resort"},
		{"another location, its own region", fromSA, nil, []string{"203.0.113.1"}, RuleOwnRegion, "sa-east", "own region"},
		{"another location, its next region", fromSA, []string{"sa"}, []string{"192.0.2.1", "192.0.2.2"}, RuleNextRegion, "us-east", "region sa-east has no healthy record"},
		{"a region without records", fromAP, nil, []string{"203.0.113.1"}, RuleNextRegion, "sa-east", "region ap-south has no record"},
		{"no locality: the set's order", nil, []string{"us1", "us2"}, []string{"198.51.100.1"}, RuleNextRegion, "eu-west", "no region of its own"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := nearestSet()
			health := func(id string) bool { return !slices.Contains(c.down, id) }
			idx, rule := SelectNearest(rs, health, c.loc, make([]int, 0, 4))
			var got []string
			for _, i := range idx {
				got = append(got, rs.Records[i].Value)
			}
			if !slices.Equal(got, c.want) || rule != c.rule {
				t.Fatalf("select: %v %s, want %v %s", got, rule, c.want, c.rule)
			}
			res, err := ExplainNearest(rs, health, c.loc)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Values(), c.want) || res.Rule != c.rule || res.Region != c.region || !strings.Contains(res.RegionReason, c.reason) {
				t.Fatalf("explain: %v %s %s %q", res.Values(), res.Rule, res.Region, res.RegionReason)
			}
			if res.LastResort != (c.rule == RuleLastResort) {
				t.Errorf("last resort %v with rule %s", res.LastResort, res.Rule)
			}
		})
	}
}

// Select and Explain without a locality agree with SelectNearest without one, and a nearest
// set never answers empty.
func TestNearestThroughSelect(t *testing.T) {
	rs := nearestSet()
	health := func(id string) bool { return id == "sa" }
	idx, rule, err := Select(rs, health, 7, nil)
	if err != nil || len(idx) != 1 || rs.Records[idx[0]].Region != "sa-east" || rule != RuleNextRegion {
		t.Fatalf("Select: %v %s %v", idx, rule, err)
	}
	if rule.String() != "next-region" || RuleOwnRegion.String() != "own-region" {
		t.Errorf("rule names: %s %s", rule, RuleOwnRegion)
	}
	res, err := Explain(rs, health, 7)
	if err != nil || !slices.Equal(res.Answer, idx) {
		t.Fatalf("Explain: %v %v", res.Answer, err)
	}
}
