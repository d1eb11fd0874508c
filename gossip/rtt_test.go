package gossip

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// Ping round trips become the least of the latest few per member and the median per region;
// members that left are forgotten, and measurements older than rttStale do not count.
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
	ping("b1", 70*time.Millisecond) // the least of 80 and 70
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

// A burst of slow pings (a starved CPU, a full queue) does not move a member's round-trip
// time; a path that stays slower shows once the window holds only its pings.
func TestRTTLeastOfWindow(t *testing.T) {
	n := &Pool{members: map[string]Member{"b1": {ID: "b1", Region: "eu-west"}}}
	p := (*pinger)(n)
	ping := func(d time.Duration) { p.NotifyPingComplete(&memberlist.Node{Name: "b1"}, d, nil) }
	ping(20 * time.Millisecond)
	for range rttWindow - 1 {
		ping(400 * time.Millisecond)
	}
	if got := n.RegionRTTs(time.Now())["eu-west"]; got != 20*time.Millisecond {
		t.Fatalf("after a burst of slow pings: %v, want the path's 20ms", got)
	}
	ping(60 * time.Millisecond) // the 20 ms ping leaves the window
	if got := n.RegionRTTs(time.Now())["eu-west"]; got != 60*time.Millisecond {
		t.Fatalf("a path that stays slower: %v, want 60ms", got)
	}
}
