package history

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestStoreBytesPerCheck pins what the store holds per check in memory: 100,000 checks with
// two verdict changes each (none to unknown, unknown to healthy: a large configuration's first
// minute), live after a collection. The check ids are the caller's (the store shares them)
// and are not counted. A map from id to a check of 64 bytes allocated apart, with changes of
// 24 bytes, holds 147 bytes a check; a slab of checks of 72 bytes indexed by
// internal/keyindex, each holding its first two changes of 16 bytes, holds 91.
func TestStoreBytesPerCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("a history of 100,000 checks")
	}
	const checks = 100_000
	ids := make([]string, checks)
	for i := range ids {
		ids[i] = fmt.Sprintf("check-%07d", i)
	}
	first := make([]Change, checks)
	second := make([]Change, checks)
	for i, id := range ids {
		first[i] = change(id, t0, StateNone, StateUnknown)
		second[i] = change(id, t0.Add(time.Second), StateUnknown, StateHealthy)
	}
	before := liveHeap()
	s, err := Open(Options{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(first, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(second, nil); err != nil {
		t.Fatal(err)
	}
	perCheck := float64(liveHeap()-before) / checks
	runtime.KeepAlive(s)
	runtime.KeepAlive(ids)
	runtime.KeepAlive(first)
	runtime.KeepAlive(second)
	if h, ok := s.Check(ids[checks-1], t0.Add(time.Minute)); !ok || len(h.Changes) != 2 || h.State != StateHealthy {
		t.Fatalf("last check: %+v, %v; want healthy after two changes", h, ok)
	}
	t.Logf("history: %.0f bytes a check", perCheck)
	if perCheck > 100 {
		t.Fatalf("the history holds %.0f bytes a check, want at most 100", perCheck)
	}
}

// liveHeap returns the bytes of the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
