package routing

import (
	"slices"
	"testing"
	"time"
)

// A location orders the other regions by measured round trip, nearest first; regions not
// measured follow in the configuration's order.
func TestLocalityOrder(t *testing.T) {
	regions := []string{"us-east", "eu-west", "sa-east", "ap-south"}
	for _, c := range []struct {
		own  string
		rtt  map[string]time.Duration
		want []string
	}{
		{"us-east", nil, []string{"eu-west", "sa-east", "ap-south"}},
		{"us-east", map[string]time.Duration{"sa-east": 30 * time.Millisecond, "eu-west": 80 * time.Millisecond}, []string{"sa-east", "eu-west", "ap-south"}},
		{"ap-south", map[string]time.Duration{"ap-south": time.Millisecond, "eu-west": 90 * time.Millisecond}, []string{"eu-west", "us-east", "sa-east"}},
	} {
		loc := NewLocality(c.own, regions, c.rtt)
		if loc.Region != c.own || !slices.Equal(loc.Order, c.want) {
			t.Errorf("%s with %v: %s then %v, want %v", c.own, c.rtt, loc.Region, loc.Order, c.want)
		}
	}
}
