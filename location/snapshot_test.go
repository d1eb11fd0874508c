package location

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestSnapshotErrors maps bad zones to their errors: every problem is reported, with the zone
// and the record set, and nothing panics.
func TestSnapshotErrors(t *testing.T) {
	zone := func(sets ...config.RecordSet) config.Zone {
		z := config.DefaultZone()
		z.Name = "bad.test."
		z.NameServers = []string{"ns1.bad.test."}
		z.RecordSets = sets
		return z
	}
	a := func(name, value string) config.RecordSet {
		return config.RecordSet{Name: name, Type: config.TypeA, Records: []config.Record{{Value: value}}}
	}
	noNS := config.DefaultZone()
	noNS.Name = "nons.test."
	cases := []struct {
		name  string
		zones []config.Zone
		want  []string
	}{
		{"not an address", []config.Zone{zone(a("www", "192.0.2.300"))}, []string{`zone bad.test.: record_sets[0]: www.bad.test. A: records[0]: must be an IPv4 address, got "192.0.2.300"`}},
		{"IPv6 in an A record", []config.Zone{zone(a("www", "2001:db8::1"))}, []string{`must be an IPv4 address`}},
		{"IPv4 in an AAAA record", []config.Zone{zone(config.RecordSet{Name: "www", Type: config.TypeAAAA, Records: []config.Record{{Value: "192.0.2.1"}}})}, []string{`must be an IPv6 address`}},
		{"outside the zone", []config.Zone{zone(a("www.other.test.", "192.0.2.1"))}, []string{`name www.other.test.: outside the zone`}},
		{"unknown type", []config.Zone{zone(config.RecordSet{Name: "www", Type: "SPF", Records: []config.Record{{Value: "x"}}})}, []string{`type SPF is not served`}},
		{"no records", []config.Zone{zone(config.RecordSet{Name: "www", Type: config.TypeA})}, []string{`www.bad.test. A: no records`}},
		{"twice", []config.Zone{zone(a("www", "192.0.2.1"), a("WWW", "192.0.2.2"))}, []string{`www.bad.test. A: defined twice`}},
		{"CNAME and other data", []config.Zone{zone(a("www", "192.0.2.1"), config.RecordSet{Name: "www", Type: config.TypeCNAME, Records: []config.Record{{Value: "x.test."}}})},
			[]string{`www.bad.test.: a CNAME cannot share its name with other records`}},
		{"several CNAMEs answered at once", []config.Zone{zone(config.RecordSet{Name: "c", Type: config.TypeCNAME, Records: []config.Record{{Value: "x"}, {Value: "y"}}})},
			[]string{`only one CNAME may be answered`}},
		{"bad MX", []config.Zone{zone(config.RecordSet{Name: "@", Type: config.TypeMX, Records: []config.Record{{Value: "mail"}}})}, []string{`must be "PREFERENCE HOST"`}},
		{"unknown policy", []config.Zone{zone(config.RecordSet{Name: "www", Type: config.TypeA, Policy: "geo", Records: []config.Record{{Value: "192.0.2.1"}}})}, []string{`unknown policy "geo"`}},
		{"no name servers", []config.Zone{noNS}, []string{`zone nons.test.: no name servers`}},
		{"hosted twice", []config.Zone{zone(), zone()}, []string{`zone bad.test.: hosted twice`}},
		{"two problems at once", []config.Zone{zone(a("a", "x"), a("b", "y"))}, []string{`record_sets[0]`, `record_sets[1]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewSnapshot(c.zones, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "location: ") {
				t.Errorf("error %q lacks the component prefix", err)
			}
		})
	}
}

// TestShardNameServers checks the names and addresses of a shard's name servers.
func TestShardNameServers(t *testing.T) {
	got := ShardNameServers([]int{7, 1999}, "NS.Vigil.Test", map[int]netip.Addr{7: netip.MustParseAddr("127.0.0.7")})
	want := []NameServer{
		{Index: 7, Name: "ns-7.ns.vigil.test.", Addr: netip.MustParseAddr("127.0.0.7")},
		{Index: 1999, Name: "ns-1999.ns.vigil.test."},
	}
	if !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}
