package location

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// describe writes everything a snapshot answers from: every zone's names, record sets and
// records, and the record sets of each health check.
func describe(s *Snapshot) string {
	var b strings.Builder
	for _, apex := range s.Zones() {
		z := s.zones[apex]
		var names []string
		for n := range z.names {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "zone %s serial %d ns %v\n", apex, z.soa.Serial, z.ns)
		for _, n := range names {
			for _, rs := range z.names[n].sets {
				fmt.Fprintf(&b, "  %s %v %v\n", rs.label(), rs.rrs, rs.cfg.Records)
			}
		}
	}
	for id := range s.byCheck.All("") {
		sets := s.setsFor(id)
		var labels []string
		for _, rs := range sets {
			labels = append(labels, rs.label())
		}
		slices.Sort(labels)
		fmt.Fprintf(&b, "check %s: %v\n", id, labels)
	}
	fmt.Fprintf(&b, "labels %d\n", s.maxLabels)
	return b.String()
}

// TestPatchMatchesRebuild: a snapshot patched zone by zone (zones added, changed, removed)
// answers from exactly what a snapshot compiled afresh from the same zones holds, and the
// snapshot it was patched from is unchanged.
func TestPatchMatchesRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	zones := map[string]config.Zone{}
	randomZone := func(apex string) config.Zone {
		z := config.DefaultZone()
		z.Name, z.NameServers = apex, []string{"ns1.example."}
		z.SOA.Serial = uint32(rng.IntN(1000))
		for i := range rng.IntN(4) {
			z.RecordSets = append(z.RecordSets, config.RecordSet{
				Name: fmt.Sprintf("h%d.%s", i, apex), Type: config.TypeA, Policy: config.PolicyMultivalue,
				Records: []config.Record{
					{Value: fmt.Sprintf("192.0.2.%d", 1+rng.IntN(200)), HealthCheck: fmt.Sprintf("c%d", rng.IntN(6))},
					{Value: "198.51.100.1", HealthCheck: fmt.Sprintf("c%d", rng.IntN(6))},
				}})
		}
		return z
	}
	snap, err := NewSnapshot(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 200 {
		before, beforeText := snap, describe(snap)
		var patches []ZonePatch
		for range 1 + rng.IntN(3) {
			apex := fmt.Sprintf("z%d.%s.test.", rng.IntN(8), []string{"a", "b.a"}[rng.IntN(2)])
			if rng.IntN(3) == 0 {
				delete(zones, apex)
				patches = append(patches, ZonePatch{Apex: apex})
				continue
			}
			z := randomZone(apex)
			zones[apex] = z
			patches = append(patches, ZonePatch{Apex: apex, Zone: &z})
		}
		snap = snap.Patch(patches)
		if f := snap.Failures(); len(f) > 0 {
			t.Fatal(f)
		}
		var all []config.Zone
		for _, z := range zones {
			all = append(all, z)
		}
		fresh, err := NewSnapshot(all, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := describe(snap), describe(fresh); got != want {
			t.Fatalf("step %d: patched\n%s\nrebuilt\n%s", step, got, want)
		}
		if describe(before) != beforeText {
			t.Fatalf("step %d: patching changed the snapshot patched from", step)
		}
	}
}
