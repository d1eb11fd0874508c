package location

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
)

// oneZone returns zone apex with its own name server and one A record set at www.
func oneZone(apex, addr string) config.Zone {
	z := config.DefaultZone()
	z.Name = apex
	z.NameServers = []string{"ns1." + apex}
	z.RecordSets = []config.RecordSet{{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: addr}}}}
	return z
}

// broken returns z with a TXT value no version of the parser takes, as a control plane of
// another version might send it.
func broken(z config.Zone) config.Zone {
	z.RecordSets = append(slices.Clone(z.RecordSets),
		config.RecordSet{Name: "txt", Type: config.TypeTXT, Records: []config.Record{{Value: `"unbalanced`}}})
	return z
}

// wwwOf asks www.<apex> A of s and returns the answer's values and rcode.
func wwwOf(t *testing.T, s *Server, apex string) ([]string, int) {
	t.Helper()
	r := ask(t, s, query("www."+apex, dns.TypeA, 0), false)
	return values(r), r.Rcode
}

// TestOneZoneFailsOthersInstall: a zone that does not compile keeps its previous version (or
// is not served when it had none) and says why; every other zone takes its new data, by a
// whole rebuild and by a patch; the gauge names the zone and what it serves, and goes away
// once a version that compiles arrives.
func TestOneZoneFailsOthersInstall(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{Addr: "127.0.0.1:0", Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	gauge := func(zone, served string) float64 {
		return testutil.ToFloat64(s.metrics.zoneFailed.WithLabelValues(zone, served))
	}
	s.SetSnapshot(mustSnapshot(t, []config.Zone{oneZone("a.test.", "192.0.2.1"), oneZone("b.test.", "192.0.2.2")}, nil))

	// A whole configuration: a.test breaks, b.test changes, c.test is new and broken.
	snap := s.Snapshot().Rebuild([]config.Zone{
		broken(oneZone("a.test.", "192.0.2.10")), oneZone("b.test.", "192.0.2.20"), broken(oneZone("c.test.", "192.0.2.30")),
	}, nil)
	s.SetSnapshot(snap)
	if v, _ := wwwOf(t, s, "b.test."); !slices.Equal(v, []string{"192.0.2.20"}) {
		t.Errorf("b.test after the rebuild: %v, want its new data", v)
	}
	if v, _ := wwwOf(t, s, "a.test."); !slices.Equal(v, []string{"192.0.2.1"}) {
		t.Errorf("a.test after the rebuild: %v, want its previous version", v)
	}
	if _, rcode := wwwOf(t, s, "c.test."); rcode != dns.RcodeRefused {
		t.Errorf("c.test (never installed): rcode %s, want REFUSED", dns.RcodeToString[rcode])
	}
	states := s.Snapshot().ZoneStates()
	if len(states) != 3 || !states[0].Served || states[0].Serial != 1 || !strings.Contains(states[0].Error, "unbalanced quotes") ||
		states[1].Error != "" || !states[1].Served || states[2].Served || states[2].Error == "" {
		t.Errorf("zone states %+v", states)
	}
	if len(s.Snapshot().Failures()) != 2 {
		t.Errorf("failures %+v, want a.test and c.test", s.Snapshot().Failures())
	}
	if gauge("a.test.", "previous") != 1 || gauge("c.test.", "none") != 1 {
		t.Errorf("gauge a.test previous %v, c.test none %v; want 1 and 1", gauge("a.test.", "previous"), gauge("c.test.", "none"))
	}
	// The gauge passes the linter of promtool check metrics.
	if problems, err := testutil.GatherAndLint(reg, "vigil_location_zone_install_failed"); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}

	// A patch of b.test alone: a.test stays as it was, failed, and b.test changes.
	b := oneZone("b.test.", "192.0.2.21")
	s.PatchZones(s.Snapshot().Patch([]ZonePatch{{Apex: "b.test.", Zone: &b}}), []string{"b.test."})
	if v, _ := wwwOf(t, s, "b.test."); !slices.Equal(v, []string{"192.0.2.21"}) {
		t.Errorf("b.test after the patch: %v", v)
	}
	if len(s.Snapshot().Failures()) != 2 {
		t.Errorf("failures after a patch of another zone: %+v", s.Snapshot().Failures())
	}

	// A patch that breaks b.test keeps its last version; one that fixes a.test installs it.
	bad, fixed := broken(oneZone("b.test.", "192.0.2.22")), oneZone("a.test.", "192.0.2.11")
	s.PatchZones(s.Snapshot().Patch([]ZonePatch{{Apex: "b.test.", Zone: &bad}, {Apex: "a.test.", Zone: &fixed}}), []string{"a.test.", "b.test."})
	if v, _ := wwwOf(t, s, "b.test."); !slices.Equal(v, []string{"192.0.2.21"}) {
		t.Errorf("b.test broken by a patch: %v, want its last version", v)
	}
	if v, _ := wwwOf(t, s, "a.test."); !slices.Equal(v, []string{"192.0.2.11"}) {
		t.Errorf("a.test fixed by a patch: %v", v)
	}
	var failed []string
	for _, f := range s.Snapshot().Failures() {
		failed = append(failed, f.Zone)
	}
	if !slices.Equal(failed, []string{"b.test.", "c.test."}) {
		t.Errorf("failed zones %v, want b.test. c.test.", failed)
	}
	if n := testutil.CollectAndCount(s.metrics.zoneFailed); n != 2 || gauge("b.test.", "previous") != 1 {
		t.Errorf("%d failed-zone series, b.test previous %v; want 2 and 1", n, gauge("b.test.", "previous"))
	}

	// Removing c.test ends its failure.
	s.PatchZones(s.Snapshot().Patch([]ZonePatch{{Apex: "c.test."}}), []string{"c.test."})
	if n := testutil.CollectAndCount(s.metrics.zoneFailed); n != 1 {
		t.Errorf("%d failed-zone series after c.test is removed, want 1", n)
	}
}
