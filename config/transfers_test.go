package config

import (
	"net/netip"
	"slices"
	"testing"
)

// Which location feeds a zone's secondaries, and which networks may transfer it.
func TestTransfersFeedsAndAllow(t *testing.T) {
	byRegion := &Transfers{Region: "us-east"}
	byNode := &Transfers{Location: "loc-1", Region: ""}
	for _, c := range []struct {
		t          *Transfers
		id, region string
		want       bool
	}{
		{byRegion, "loc-1", "us-east", true},
		{byRegion, "loc-2", "eu-west", false},
		{byNode, "loc-1", "eu-west", true},
		{byNode, "loc-2", "us-east", false},
		{nil, "loc-1", "us-east", false},
	} {
		if got := c.t.Feeds(c.id, c.region); got != c.want {
			t.Errorf("%+v feeds %s in %s: %v, want %v", c.t, c.id, c.region, got, c.want)
		}
	}
	tr := &Transfers{Allow: []string{"192.0.2.7/24", "2001:db8::1"}, Secondaries: []Secondary{
		{Address: "198.51.100.53", Key: "k."}, {Address: "[2001:db8::53]:5353", Key: "k."}}}
	got := tr.AllowPrefixes()
	want := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::1/128"),
		netip.MustParsePrefix("198.51.100.53/32"), netip.MustParsePrefix("2001:db8::53/128")}
	if !slices.Equal(got, want) {
		t.Errorf("allowed networks %v, want %v", got, want)
	}
	if ap, err := tr.Secondaries[0].AddrPort(); err != nil || ap.Port() != 53 {
		t.Errorf("a secondary without a port: %v %v, want port 53", ap, err)
	}
}
