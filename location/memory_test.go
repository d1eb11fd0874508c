package location_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
)

// TestConfigurationBytesPerCheck pins what a DNS location holds for its configuration, per
// check: the state.State of 100,000 http checks, each deciding a multivalue record set
// (config.Scale's document, 100 zones of 1,000), and the DNS snapshot compiled from it as a
// node compiles it (the state's record sets shared, not copied), live after a collection.
// It holds about 734 bytes a check; the bound of 900 fails should the snapshot copy each
// record set again, a check keep a whole config.Check (384 bytes) or the tree nodes double,
// which together came to about 1,445.
func TestConfigurationBytesPerCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a configuration of 100,000 checks")
	}
	const checks = 100_000
	before := liveHeap()
	doc := config.Scale{Checks: checks, Protocol: config.ProtocolHTTP}.Document()
	s := state.NewState(doc)
	doc = nil
	var zones []location.ZonePatch
	for h := range s.ZoneHeads() {
		zones = append(zones, location.ZonePatch{Apex: h.Name, Zone: h, Sets: slices.Collect(s.RecordSets(h.Name)),
			Shard: []location.NameServer{{Index: 0, Name: "ns-0.ns.vigil.test."}}})
	}
	empty, err := location.NewSnapshot(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := empty.RebuildZones(zones)
	zones = nil
	if f := snap.Failures(); len(f) > 0 {
		t.Fatalf("zones failed: %v", f)
	}
	perCheck := float64(liveHeap()-before) / checks
	runtime.KeepAlive(s)
	runtime.KeepAlive(snap)
	t.Logf("state and snapshot: %.0f bytes a check", perCheck)
	if perCheck > 900 {
		t.Fatalf("state and snapshot hold %.0f bytes a check, want at most 900", perCheck)
	}
}

// liveHeap returns the bytes of the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
