package verdict

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
)

// loaded returns an engine holding checks probed checks, each reported healthy by 6 of 6
// fresh checkers, decided at t0.
func loaded(tb testing.TB, checks int) (*Engine, []string) {
	tb.Helper()
	doc := &config.Document{Regions: []string{"r1", "r2", "r3"}}
	doc.Quorum.FreshnessWindow = config.Duration(15 * time.Second)
	ids := make([]string, checks)
	for i := range ids {
		ids[i] = fmt.Sprintf("check-%07d", i)
		doc.Checks = append(doc.Checks, config.Check{ID: ids[i], Protocol: config.ProtocolHTTP, HealthyThreshold: 0.18, MinReporters: 1})
	}
	e := New()
	e.Configure(doc)
	for k := range 6 {
		name := fmt.Sprintf("checker-%d", k)
		e.Progress(name, fmt.Sprintf("r%d", k%3+1), t0)
		for _, id := range ids {
			e.SetReport(id, name, gossip.Entry{Status: checker.StatusHealthy, Latency: time.Millisecond})
		}
	}
	e.Advance(t0)
	e.Changes(nil)
	return e, ids
}

// BenchmarkEngineReportChange: one report changes and the engine re-decides, at 10k, 100k
// and 1M checks × 6 reports. The cost does not grow with the number of checks.
func BenchmarkEngineReportChange(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("checks=%d", n), func(b *testing.B) {
			e, ids := loaded(b, n)
			var out []Change
			now := t0
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				now = now.Add(time.Microsecond)
				st := checker.StatusUnhealthy
				if i%2 == 0 {
					st = checker.StatusHealthy
				}
				e.SetReport(ids[i%n], "checker-0", gossip.Entry{Status: st})
				e.Advance(now)
				out = e.Changes(out[:0])
			}
		})
	}
}

// BenchmarkEngineHeartbeat: a fresh checker's progress, at 1M checks × 6 reports: O(1).
func BenchmarkEngineHeartbeat(b *testing.B) {
	e, _ := loaded(b, 1_000_000)
	now := t0
	b.ResetTimer()
	for b.Loop() {
		now = now.Add(time.Microsecond)
		e.Progress("checker-0", "r1", now)
		e.Advance(now)
	}
}

// TestEngineBytesPerCheck measures what the engine holds per check with 6 reports each, at
// 100,000 checks (the configuration's own memory not counted). It fails above 175 bytes a
// check and logs the figure.
func TestEngineBytesPerCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 600,000 reports")
	}
	const n = 100_000
	doc := &config.Document{}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("check-%07d", i)
		doc.Checks = append(doc.Checks, config.Check{ID: ids[i], Protocol: config.ProtocolHTTP, HealthyThreshold: 0.18, MinReporters: 1})
	}
	before := heapInUse()
	e := New()
	e.Configure(doc)
	for k := range 6 {
		name := fmt.Sprintf("checker-%d", k)
		e.Progress(name, "r1", t0)
		for _, id := range ids {
			e.SetReport(id, name, gossip.Entry{Status: checker.StatusHealthy})
		}
	}
	e.Advance(t0)
	e.Changes(nil)
	after := heapInUse()
	per := float64(after-before) / n
	t.Logf("engine: %.1f bytes per check with 6 reports (%d checks)", per, n)
	// A Go map from id to index, a check of 104 bytes and votes of 16 hold 262 bytes a check
	// here; the index of internal/keyindex, a check of 88 bytes and votes of 8 without their
	// place in the checker's list hold 156.
	if per > 175 {
		t.Errorf("engine holds %.1f bytes per check, want at most 175", per)
	}
	runtime.KeepAlive(e)
	runtime.KeepAlive(doc)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
