package location

import (
	"slices"
	"testing"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// TestNoHealthyChoices: over UDP, a record set that chose nodata answers NOERROR with no
// records and the zone's SOA in authority (RFC 2308 NODATA) when its records are all
// unhealthy, one that chose fallback answers its fallback record, and the default answers
// every record (last resort); each answers its healthy record otherwise.
func TestNoHealthyChoices(t *testing.T) {
	s := startServer(t, Config{})
	zones := testZones()
	z := &zones[0]
	add := func(name string, choice config.NoHealthy, fallback string) {
		z.RecordSets = append(z.RecordSets, config.RecordSet{Name: name + "." + z.Name, Type: config.TypeA, Policy: config.PolicyMultivalue,
			NoHealthy: choice, Fallback: fallback, Records: []config.Record{
				{Value: "192.0.2.61", HealthCheck: "nh-a"}, {Value: "192.0.2.62", HealthCheck: "nh-b"}}})
	}
	add("nh-all", "", "")
	add("nh-nodata", config.NoHealthyNoData, "")
	add("nh-fallback", config.NoHealthyFallback, "203.0.113.99")
	s.SetSnapshot(mustSnapshot(t, zones, testShards()))
	ask := func(name string) *dns.Msg { return exchange(t, "udp", s.Addr(), query(name+"."+z.Name, dns.TypeA, 0)) }

	s.SetVerdicts(map[string]bool{"nh-a": true, "nh-b": false})
	for _, name := range []string{"nh-all", "nh-nodata", "nh-fallback"} {
		if got := values(ask(name)); !slices.Equal(got, []string{"192.0.2.61"}) {
			t.Errorf("%s, one healthy: %v", name, got)
		}
	}
	s.SetVerdicts(map[string]bool{"nh-a": false, "nh-b": false})
	all := values(ask("nh-all"))
	slices.Sort(all)
	if !slices.Equal(all, []string{"192.0.2.61", "192.0.2.62"}) {
		t.Errorf("nh-all, none healthy: %v, want both (last resort)", all)
	}
	r := ask("nh-nodata")
	if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 0 || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
		t.Errorf("nh-nodata, none healthy: want NODATA with the SOA, got\n%v", r)
	}
	r = ask("nh-fallback")
	if got := values(r); r.Rcode != dns.RcodeSuccess || !slices.Equal(got, []string{"203.0.113.99"}) {
		t.Errorf("nh-fallback, none healthy: %v", r)
	}
	res, err := s.Explain("nh-fallback."+z.Name, "A", 1)
	if err != nil || res.Rule.String() != "fallback" || res.Fallback != "203.0.113.99" || !slices.Equal(res.Values(), []string{"203.0.113.99"}) {
		t.Errorf("explain nh-fallback: %+v %v", res, err)
	}
}
