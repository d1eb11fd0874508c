package shard

import (
	"fmt"
	"runtime"
	"testing"
)

// TestPlanBytesPerCheck pins what a Plan holds per check: 100,000 http checks in three regions
// of two checkers, two checkers per region (six shards a check), live after a collection. The
// check ids are the configuration's (the plan shares them) and are not counted. A Go map
// from id to position and arrays with the spare room of append hold 117 bytes a check;
// internal/keyindex and arrays at their size hold 78.
func TestPlanBytesPerCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("a plan of 100,000 checks")
	}
	const checks = 100_000
	regions := []string{"us-east", "eu-west", "sa-east"}
	d := doc(regions)
	for i := range checks {
		d.Checks = append(d.Checks, check(fmt.Sprintf("check-%07d", i), 2))
	}
	m := Membership{"us-east": {"u1", "u2"}, "eu-west": {"e1", "e2"}, "sa-east": {"s1", "s2"}}
	before := liveHeap()
	p, err := NewPlan(d, m)
	if err != nil {
		t.Fatal(err)
	}
	perCheck := float64(liveHeap()-before) / checks
	runtime.KeepAlive(p)
	runtime.KeepAlive(d)
	t.Logf("plan: %.0f bytes a check", perCheck)
	if perCheck > 90 {
		t.Fatalf("the plan holds %.0f bytes a check, want at most 90", perCheck)
	}
}

// liveHeap returns the bytes of the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
