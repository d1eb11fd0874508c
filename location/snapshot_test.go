package location

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
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
		{"not an address", []config.Zone{zone(a("www", "192.0.2.300"))}, []string{`zone bad.test.: record_sets[0]: www.bad.test. A: records[0]: "192.0.2.300" is not an IP address`}},
		{"IPv6 in an A record", []config.Zone{zone(a("www", "2001:db8::1"))}, []string{`is not an IPv4 address`}},
		{"IPv4 in an AAAA record", []config.Zone{zone(config.RecordSet{Name: "www", Type: config.TypeAAAA, Records: []config.Record{{Value: "192.0.2.1"}}})}, []string{`is not an IPv6 address`}},
		{"outside the zone", []config.Zone{zone(a("www.other.test.", "192.0.2.1"))}, []string{`name www.other.test.: outside the zone`}},
		{"unknown type", []config.Zone{zone(config.RecordSet{Name: "www", Type: "SPF", Records: []config.Record{{Value: "x"}}})}, []string{`type SPF is not served`}},
		{"no records", []config.Zone{zone(config.RecordSet{Name: "www", Type: config.TypeA})}, []string{`www.bad.test. A: no records`}},
		{"twice", []config.Zone{zone(a("www", "192.0.2.1"), a("WWW", "192.0.2.2"))}, []string{`www.bad.test. A: defined twice`}},
		{"CNAME and other data", []config.Zone{zone(a("www", "192.0.2.1"), config.RecordSet{Name: "www", Type: config.TypeCNAME, Records: []config.Record{{Value: "x"}}})},
			[]string{`www.bad.test.: a CNAME cannot share its name with other records`}},
		{"several CNAMEs answered at once", []config.Zone{zone(config.RecordSet{Name: "c", Type: config.TypeCNAME, Records: []config.Record{{Value: "x"}, {Value: "y"}}})},
			[]string{`only one CNAME may be answered`}},
		{"bad MX", []config.Zone{zone(config.RecordSet{Name: "@", Type: config.TypeMX, Records: []config.Record{{Value: "mail"}}})}, []string{`"mail" is not "<preference> <host>"`}},
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

// TestRecordValues checks the presentation forms a record value may take.
func TestRecordValues(t *testing.T) {
	for _, c := range []struct {
		rtype uint16
		value string
		want  string
	}{
		{dns.TypeA, "192.0.2.1", "192.0.2.1"},
		{dns.TypeAAAA, "2001:DB8::1", "2001:db8::1"},
		{dns.TypeCNAME, "www", "www.z.test."},
		{dns.TypeCNAME, "@", "z.test."},
		{dns.TypeCNAME, "Target.Example.", "target.example."},
		{dns.TypeMX, "10 mail", "10 mail.z.test."},
		{dns.TypeMX, "0 .", "0 ."},
		{dns.TypeNS, "ns1.other.", "ns1.other."},
		{dns.TypeTXT, "v=spf1 -all", `"v=spf1 -all"`},
		{dns.TypeTXT, `say "hi"`, `"say \"hi\""`},
		{dns.TypeTXT, `"a" "b c"`, `"a" "b c"`},
		{dns.TypeTXT, strings.Repeat("y", 300), `"` + strings.Repeat("y", 255) + `" "` + strings.Repeat("y", 45) + `"`},
	} {
		rr, err := buildRR("n.z.test.", c.rtype, 60, c.value, "z.test.")
		if err != nil {
			t.Errorf("%s %q: %v", dns.TypeToString[c.rtype], c.value, err)
			continue
		}
		got := strings.TrimPrefix(rr.String(), rr.Header().String())
		if got != c.want {
			t.Errorf("%s %q: %q, want %q", dns.TypeToString[c.rtype], c.value, got, c.want)
		}
		// The record must survive the wire.
		m := new(dns.Msg)
		m.Answer = []dns.RR{rr}
		if _, err := m.Pack(); err != nil {
			t.Errorf("%s %q does not pack: %v", dns.TypeToString[c.rtype], c.value, err)
		}
	}
	for _, bad := range []string{"", "not a name", `"unterminated`, strings.Repeat("z", maxValue+1)} {
		for _, rtype := range []uint16{dns.TypeCNAME, dns.TypeTXT} {
			if bad == "not a name" && rtype == dns.TypeTXT {
				continue
			}
			if bad == `"unterminated` && rtype == dns.TypeCNAME {
				continue
			}
			if _, err := buildRR("n.z.test.", rtype, 60, bad, "z.test."); err == nil {
				t.Errorf("%s %q: no error", dns.TypeToString[rtype], bad)
			}
		}
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
