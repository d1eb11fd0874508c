package location

import (
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/nsdtest"
	"github.com/vigil-dns/vigil/location/routing"
)

// policiesZone holds one record set of each kind a transfer resolves (xfr_image.go): a
// failover set with each no_healthy choice, a weighted set with a fallback and a record of
// weight 0, a multivalue set in last resort and one with nodata (its name kept by a TXT set),
// aliases of a failover and of a weighted set, CNAMEs (one chosen by failover), a wildcard
// chosen by failover, a nearest set, and a delegation with its glue. The checks p, s and q
// decide their health.
func policiesZone() config.Zone {
	z := config.DefaultZone()
	z.Name = "policies.test."
	z.TTL = 30
	z.NameServers = []string{"ns1.policies.test."}
	w := func(n int) *int { return &n }
	a := func(v, check string) config.Record { return config.Record{Value: v, HealthCheck: check} }
	primary := func(v, check string) config.Record {
		return config.Record{Value: v, HealthCheck: check, Role: config.RolePrimary}
	}
	secondary := func(v, check string) config.Record {
		return config.Record{Value: v, HealthCheck: check, Role: config.RoleSecondary}
	}
	z.RecordSets = []config.RecordSet{
		{Name: "ns1", Type: config.TypeA, Records: []config.Record{{Value: "127.0.0.1"}}},
		{Name: "fo", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
			primary("192.0.2.10", "p"), secondary("192.0.2.11", "s")}},
		{Name: "fond", Type: config.TypeA, Policy: config.PolicyFailover, NoHealthy: config.NoHealthyNoData, Records: []config.Record{
			primary("192.0.2.20", "p"), secondary("192.0.2.21", "s")}},
		{Name: "wfb", Type: config.TypeA, Policy: config.PolicyWeighted, NoHealthy: config.NoHealthyFallback, Fallback: "203.0.113.250",
			Records: []config.Record{
				{Value: "192.0.2.30", HealthCheck: "p", Weight: w(10)},
				{Value: "192.0.2.31", HealthCheck: "s", Weight: w(20)},
				{Value: "192.0.2.32", HealthCheck: "q", Weight: w(0)}}},
		{Name: "mv", Type: config.TypeA, Policy: config.PolicyMultivalue, Records: []config.Record{
			a("192.0.2.40", "p"), a("192.0.2.41", "s"), a("192.0.2.42", "q")}},
		{Name: "mvnd", Type: config.TypeAAAA, Policy: config.PolicyMultivalue, NoHealthy: config.NoHealthyNoData, Records: []config.Record{
			a("2001:db8::1", "p"), a("2001:db8::2", "s")}},
		{Name: "mvnd", Type: config.TypeTXT, Records: []config.Record{{Value: `"keeps the name"`}}},
		{Name: "al", Type: config.TypeA, Alias: "fo"},
		{Name: "alw", Type: config.TypeA, Alias: "wfb"},
		{Name: "www", Type: config.TypeCNAME, Records: []config.Record{{Value: "fo.policies.test."}}},
		{Name: "cfo", Type: config.TypeCNAME, Policy: config.PolicyFailover, Records: []config.Record{
			primary("fo.policies.test.", "p"), secondary("mv.policies.test.", "s")}},
		{Name: "*.wild", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
			primary("192.0.2.50", "p"), secondary("192.0.2.51", "s")}},
		{Name: "near", Type: config.TypeA, Policy: config.PolicyNearest, Records: []config.Record{
			{Value: "192.0.2.70", HealthCheck: "p", Region: "us-east"},
			{Value: "192.0.2.71", HealthCheck: "s", Region: "eu-west"}}},
		{Name: "sub", Type: config.TypeNS, Records: []config.Record{{Value: "ns.sub.policies.test."}}},
		{Name: "ns.sub", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.60"}}},
	}
	return z
}

// startWithSecondaries starts NSD and Knot (those installed) as secondaries of the location
// start returns, given the secondaries to notify, for the zones apexes.
func startWithSecondaries(t *testing.T, apexes []string, start func(secs []Secondary) *Server) (*Server, []*secondary) {
	t.Helper()
	nsd, knot := secondaryBinaries(t)
	lo := netip.MustParseAddr("127.0.0.1")
	nsdPort, knotPort := nsdtest.FreePort(t), nsdtest.FreePort(t)
	var secs []Secondary
	if nsd {
		secs = append(secs, Secondary{Addr: netip.AddrPortFrom(lo, uint16(nsdPort)), Key: xfrKeyName})
	}
	if knot {
		secs = append(secs, Secondary{Addr: netip.AddrPortFrom(lo, uint16(knotPort)), Key: xfrKeyName})
	}
	s := start(secs)
	var out []*secondary
	if nsd {
		out = append(out, startNSDSecondary(t, nsdPort, s.Addr(), apexes))
	}
	if knot {
		out = append(out, startKnotSecondary(t, knotPort, s.Addr(), apexes))
	}
	t.Logf("location at %s; secondaries %v", s.Addr(), secs)
	return s, out
}

// NSD and Knot, secondaries of a location, answer every name and type of a zone that holds
// every policy, no_healthy choice, alias, CNAME, wildcard, nearest set and delegation as the
// location does, through four states of its verdicts (all healthy, p down, p and s down, all
// down) and a change of the location's nearest region. The differences are the documented
// ones (docs/transfers.md, "What a transfer holds"): a weighted set answers at the
// secondary every record the location may answer, and a name left without record sets
// (no_healthy: nodata) answers NXDOMAIN at the secondary where the location answers NODATA.
func TestTransferPoliciesDifferential(t *testing.T) {
	z := policiesZone()
	apex := z.Name
	s, secs := startWithSecondaries(t, []string{apex}, func(secs []Secondary) *Server {
		s := startServer(t, Config{Transfer: TransferConfig{DataDir: t.TempDir()}})
		s.SetLocality(routing.Locality{Region: "us-east", Order: []string{"eu-west"}})
		s.SetSnapshot(mustSnapshot(t, []config.Zone{z}, nil))
		if err := s.SetTransfers(map[string]ZoneTransfer{apex: {Secondaries: secs}},
			[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}); err != nil {
			t.Fatal(err)
		}
		waitServed(t, s, apex)
		return s
	})
	weighted := map[string]bool{"wfb." + apex: true, "alw." + apex: true}
	names := []string{apex, "nope." + apex, "x.wild." + apex, "a.b.wild." + apex, "x.sub." + apex}
	for _, rs := range z.RecordSets {
		names = append(names, config.OwnerName(rs.Name, apex))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var verdicts map[string]bool
	compare := func(stage string) {
		t.Helper()
		asked, empty := 0, 0
		for _, sec := range secs {
			for _, name := range names {
				for _, qtype := range diffTypes() {
					asked++
					a, b := askAt(t, s.Addr(), name, qtype), askAt(t, sec.addr, name, qtype)
					q := stage + " " + sec.name + ": " + name + " " + dns.TypeToString[qtype]
					if name == "fond."+apex && !verdicts["p"] && !verdicts["s"] && verdicts != nil {
						// The documented difference: no record set left at the name.
						if a.Rcode != dns.RcodeSuccess || len(a.Answer) != 0 || b.Rcode != dns.RcodeNameError {
							t.Errorf("%s: location %s %v, secondary %s %v; want NODATA and NXDOMAIN", q,
								dns.RcodeToString[a.Rcode], a.Answer, dns.RcodeToString[b.Rcode], b.Answer)
						}
						continue
					}
					if a.Rcode != b.Rcode {
						t.Errorf("%s: rcode %s, location %s", q, dns.RcodeToString[b.Rcode], dns.RcodeToString[a.Rcode])
						continue
					}
					la, lb := rrStrings(a.Answer), rrStrings(b.Answer)
					switch {
					case weighted[name] && qtype == dns.TypeA:
						if len(la) != 1 || !slices.Contains(lb, la[0]) {
							t.Errorf("%s: weighted set %v does not hold the location's %v", q, lb, la)
						}
					case !slices.Equal(la, lb):
						t.Errorf("%s: answer\n%v\nlocation\n%v", q, lb, la)
					}
					if len(a.Answer) == 0 {
						empty++
						if na, nb := rrStrings(a.Ns), rrStrings(b.Ns); !slices.Equal(na, nb) {
							t.Errorf("%s: authority\n%v\nlocation\n%v", q, nb, na)
						}
					}
				}
			}
		}
		t.Logf("%s: %d questions compared (%d without answers)", stage, asked, empty)
	}
	settle := func(change func()) {
		t.Helper()
		before, _ := s.Serial(apex)
		change()
		serial := nextSerial(t, s, apex, before)
		for _, sec := range secs {
			waitSerial(t, sec, apex, serial, 10*time.Second)
		}
	}
	compare("all healthy")
	for _, stage := range []struct {
		name string
		v    map[string]bool
	}{
		{"p down", map[string]bool{"p": false, "s": true, "q": true}},
		{"p and s down", map[string]bool{"p": false, "s": false, "q": true}},
		{"all down", map[string]bool{"p": false, "s": false, "q": false}},
	} {
		verdicts = stage.v
		settle(func() { s.SetVerdicts(stage.v) })
		compare(stage.name)
	}
	verdicts = map[string]bool{"p": true, "s": true, "q": true}
	settle(func() { s.SetVerdicts(maps.Clone(verdicts)) })
	settle(func() { s.SetLocality(routing.Locality{Region: "eu-west", Order: []string{"us-east"}}) })
	if v := values(askAt(t, s.Addr(), "near."+apex, dns.TypeA)); !slices.Equal(v, []string{"192.0.2.71"}) {
		t.Fatalf("near A from eu-west: %v", v)
	}
	compare("all healthy, answering from eu-west")
}
