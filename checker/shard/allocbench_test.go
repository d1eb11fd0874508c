package shard

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkAllocateZones: Route 53's fleet (2,048 servers, shards of 4, at most 2 shared),
// 20,000 and 1,000,000 zones allocated into a fresh allocator per iteration. Reports the time
// per zone, the peak and the retained heap in use, and the stateless mode's time for the
// same zones; then verifies the guarantee for every pair of zones that share any server.
//
// The 1,000,000-zone run takes tens of seconds with its verification, so it is a benchmark
// and not part of `make test`; the tests compare all pairs of 20,000 zones.
func BenchmarkAllocateZones(b *testing.B) {
	for _, n := range []int{20000, 1000000} {
		names := make([]string, n)
		for i := range names {
			names[i] = zoneName(i)
		}
		b.Run(fmt.Sprintf("stateful/zones=%d", n), func(b *testing.B) {
			ns := mustNameServers(b, settings(2048, 4, 2))
			var a *Allocator
			var peak uint64
			var ms runtime.MemStats
			base := heapAfterGC()
			cpu, _ := processCPU()
			for b.Loop() {
				a = nil
				var err error
				if a, err = ns.NewAllocator(); err != nil {
					b.Fatal(err)
				}
				for i, z := range names {
					if _, err := a.Allocate(z); err != nil {
						b.Fatal(err)
					}
					if i%(n/20) == 0 {
						runtime.ReadMemStats(&ms)
						peak = max(peak, ms.HeapInuse)
					}
				}
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			reportCPU(b, cpu, n, "cpu-ns/zone")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/zone")
			b.ReportMetric(float64(peak)/(1<<20), "peak_heap_inuse_MiB")
			retained := heapAfterGC() - base
			b.ReportMetric(float64(retained)/float64(n), "retained_bytes/zone")
			b.ReportMetric(float64(a.Subsets()), "subsets")

			start := time.Now()
			most, pairs := verifyPairs(b, a, 2048)
			b.ReportMetric(float64(most), "max_shared")
			b.ReportMetric(float64(pairs), "pairs_sharing_checked")
			b.Logf("%d zones: verified %d pairs sharing a server in %v; most shared %d", n, pairs, time.Since(start), most)
			if most > 2 {
				b.Fatalf("two zones share %d name servers", most)
			}
		})
		b.Run(fmt.Sprintf("stateless/zones=%d", n), func(b *testing.B) {
			ns := mustNameServers(b, settings(2048, 4, 2))
			cpu, _ := processCPU()
			for b.Loop() {
				for _, z := range names {
					_ = ns.Stateless(z)
				}
			}
			reportCPU(b, cpu, n, "cpu-ns/zone")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/zone")
		})
	}
}

// verifyPairs checks every pair of zones that share at least one server, independently of
// the allocator's subset set: an index from server to zones, then, for each zone, a count of
// how often each later zone appears among its servers' lists. It returns the most servers two
// zones share and how many (zone, later zone) incidences it counted.
func verifyPairs(tb testing.TB, a *Allocator, fleet int) (most int, pairs int64) {
	tb.Helper()
	var shards [][]int
	for _, s := range a.All() {
		shards = append(shards, s)
	}
	start := make([]int32, fleet+1)
	for _, s := range shards {
		for _, v := range s {
			start[v+1]++
		}
	}
	for i := range fleet {
		start[i+1] += start[i]
	}
	members := make([]int32, start[fleet])
	fill := slices.Clone(start[:fleet])
	for z, s := range shards {
		for _, v := range s {
			members[fill[v]] = int32(z)
			fill[v]++
		}
	}
	stamp := make([]int32, len(shards))
	count := make([]uint8, len(shards))
	for i := range stamp {
		stamp[i] = -1
	}
	for z, s := range shards {
		for _, v := range s {
			list := members[start[v]:start[v+1]]
			// Zones were added in order, so each list is sorted: start after z.
			i, _ := slices.BinarySearch(list, int32(z)+1)
			for _, y := range list[i:] {
				pairs++
				if stamp[y] != int32(z) {
					stamp[y], count[y] = int32(z), 0
				}
				count[y]++
				if int(count[y]) > most {
					most = int(count[y])
				}
			}
		}
	}
	return most, pairs
}

// BenchmarkSubsetSetMemory: the live heap per entry of the allocator's open-addressing word
// set against Go's map[uint64]struct{}, both holding the same 4,000,000 words (the packed
// triples of 1,000,000 zones).
func BenchmarkSubsetSetMemory(b *testing.B) {
	const n = 4000000
	b.Run("wordSet", func(b *testing.B) {
		var s *wordSet
		for b.Loop() {
			s = nil
			before := heapAfterGC()
			s = &wordSet{}
			for i := range uint64(n) {
				s.add(mix64(i))
			}
			b.ReportMetric(float64(heapAfterGC()-before)/n, "heap_bytes/entry")
		}
		runtime.KeepAlive(s)
	})
	b.Run("map", func(b *testing.B) {
		var m map[uint64]struct{}
		for b.Loop() {
			m = nil
			before := heapAfterGC()
			m = map[uint64]struct{}{}
			for i := range uint64(n) {
				m[mix64(i)] = struct{}{}
			}
			b.ReportMetric(float64(heapAfterGC()-before)/n, "heap_bytes/entry")
		}
		runtime.KeepAlive(m)
	})
}
