package dev

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// TestDevNearest: a nearest record set in the demo network, with the simulated links between
// regions given latencies. Each location answers its own region's record while it is healthy;
// when its region's target fails, the location answers the region its gossip pings measured
// as nearest, while the other locations keep answering their own.
func TestDevNearest(t *testing.T) {
	addrs := map[string]string{"us-east": "192.0.2.1", "eu-west": "198.51.100.1", "sa-east": "203.0.113.1"}
	n := startEdited(t, func(cfg *Config) {
		z := &cfg.Document.Zones[0]
		var recs []config.Record
		for _, r := range cfg.Regions {
			recs = append(recs, config.Record{Value: addrs[r], HealthCheck: "web-" + r, Region: r})
		}
		z.RecordSets = append(z.RecordSets, config.RecordSet{Name: "near", Type: config.TypeA, Policy: config.PolicyNearest, Records: recs})
	})
	// One-way latencies: us-east is 10 ms from eu-west and 30 ms from sa-east; eu-west is 40 ms
	// from sa-east.
	for _, l := range []struct {
		a, b string
		d    time.Duration
	}{{"us-east", "eu-west", 10 * time.Millisecond}, {"us-east", "sa-east", 30 * time.Millisecond}, {"eu-west", "sa-east", 40 * time.Millisecond}} {
		if err := n.cluster.Network().SetLatency(l.a, l.b, l.d); err != nil {
			t.Fatal(err)
		}
	}
	own := func() (bool, string) {
		for r, want := range addrs {
			got, err := answers(n.DNSAddr(r), "near.demo.vigil.test")
			if err != nil || !slices.Equal(got, []string{want}) {
				return false, fmt.Sprintf("%s answers %v (%v), want its own %s", r, got, err, want)
			}
		}
		return true, ""
	}
	eventually(t, 30*time.Second, "each location answers its own region", own)
	// The nearest region is known once pings have measured each region's nodes.
	eventually(t, 30*time.Second, "each location measured the other regions", func() (bool, string) {
		for r := range addrs {
			loc := n.cluster.Location(r).Locality()
			if len(loc.RTT) < 3 {
				return false, fmt.Sprintf("%s measured %v", r, loc.RTT)
			}
		}
		return true, ""
	})
	for _, c := range []struct{ down, next string }{{"us-east", "eu-west"}, {"sa-east", "us-east"}, {"eu-west", "us-east"}} {
		if _, err := (Client{BaseURL: n.ControlURL()}).SetTargetDown(t.Context(), c.down, true); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, c.down+" answers "+c.next+", the others their own", func() (bool, string) {
			for r, want := range addrs {
				if r == c.down {
					want = addrs[c.next]
				}
				got, err := answers(n.DNSAddr(r), "near.demo.vigil.test")
				if err != nil || !slices.Equal(got, []string{want}) {
					return false, fmt.Sprintf("%s answers %v (%v), want %s", r, got, err, want)
				}
			}
			return true, ""
		})
		ex, err := n.cluster.Location(c.down).Answer("near.demo.vigil.test", "A")
		if err != nil || ex.Region != c.next || ex.RegionReason == "" {
			t.Fatalf("explanation at %s: %+v, %v", c.down, ex, err)
		}
		t.Logf("%s: %s", c.down, ex.RegionReason)
		if _, err := (Client{BaseURL: n.ControlURL()}).SetTargetDown(t.Context(), c.down, false); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "each location answers its own region again", own)
	}
}
