package gossip

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// Ping round trips become a moving average per member and the median per region; members
// that left are forgotten, and measurements older than rttStale do not count.
func TestRegionRTTs(t *testing.T) {
	n := &Pool{members: map[string]Member{
		"a1": {ID: "a1", Region: "us-east"}, "a2": {ID: "a2", Region: "us-east"}, "a3": {ID: "a3", Region: "us-east"},
		"b1": {ID: "b1", Region: "eu-west"},
	}}
	p := (*pinger)(n)
	ping := func(id string, d time.Duration) { p.NotifyPingComplete(&memberlist.Node{Name: id}, d, nil) }
	ping("a1", 10*time.Millisecond)
	ping("a2", 30*time.Millisecond)
	ping("a3", 90*time.Millisecond)
	ping("b1", 80*time.Millisecond)
	ping("b1", 40*time.Millisecond) // average: 80 + (40-80)/4 = 70
	ping("gone", time.Millisecond)
	got := n.RegionRTTs(time.Now())
	if got["us-east"] != 30*time.Millisecond || got["eu-west"] != 70*time.Millisecond || len(got) != 2 {
		t.Fatalf("RTTs: %v", got)
	}
	if _, kept := n.rtt.byID["gone"]; kept {
		t.Error("a node that is no member is still held")
	}
	if later := n.RegionRTTs(time.Now().Add(rttStale + time.Second)); len(later) != 0 {
		t.Errorf("stale measurements count: %v", later)
	}
}
