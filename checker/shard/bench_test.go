package shard

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// The benchmarks behind BENCHMARKS.md ("Shuffle sharding"). Run them with
//
//	go test -run '^$' -bench . -benchmem ./checker/shard/
//
// Figures that are not times are reported with b.ReportMetric.

// heapAfterGC returns the bytes of live heap objects after a full collection.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkAssignOne: the shard of one check among 100 checkers of a region.
func BenchmarkAssignOne(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	members := ids(rng, "checker", 100)
	r := NewRegion("r", members)
	ring := newKetama(members, 160)
	keys := hashes("check", 1024)
	checkIDs := make([]string, len(keys))
	for i := range checkIDs {
		checkIDs[i] = fmt.Sprintf("check-%d", i)
	}
	for _, k := range []int{2, 3} {
		b.Run(fmt.Sprintf("rendezvous/k=%d", k), func(b *testing.B) {
			buf := make([]int32, 0, k)
			i := 0
			cpu, _ := processCPU()
			for b.Loop() {
				buf = r.AppendShard(buf[:0], keys[i&1023], k)
				i++
			}
			reportCPU(b, cpu, 1, "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("rendezvous-by-id/k=%d", k), func(b *testing.B) {
			i := 0
			cpu, _ := processCPU()
			for b.Loop() {
				_ = r.Shard(checkIDs[i&1023], k)
				i++
			}
			reportCPU(b, cpu, 1, "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("ketama160/k=%d", k), func(b *testing.B) {
			buf := make([]int32, 0, k)
			i := 0
			cpu, _ := processCPU()
			for b.Loop() {
				buf = ring.appendShard(buf[:0], keys[i&1023], k)
				i++
			}
			reportCPU(b, cpu, 1, "cpu-ns/op")
		})
	}
}

// recomputeFixture is 100,000 checks in 3 regions of 100 checkers, 2 per region, and two
// memberships that differ by one checker leaving one region.
func recomputeFixture(tb testing.TB) (*config.Document, Membership, Membership) {
	rng := rand.New(rand.NewPCG(2, 2))
	regions := []string{"us-east", "eu-west", "sa-east"}
	checks := make([]config.Check, 100000)
	for i := range checks {
		checks[i] = check(fmt.Sprintf("check-%06d", i), 2)
	}
	d := doc(regions, checks...)
	m1, m2 := Membership{}, Membership{}
	for _, r := range regions {
		m1[r] = ids(rng, r, 100)
		m2[r] = m1[r]
	}
	m2["eu-west"] = m1["eu-west"][1:]
	return d, m1, m2
}

// BenchmarkRecomputeAll: every assignment of 100,000 checks × 3 regions of 100 checkers,
// recomputed after a membership change (alternating one checker leaving and rejoining).
func BenchmarkRecomputeAll(b *testing.B) {
	d, m1, m2 := recomputeFixture(b)
	p, err := NewPlan(d, m1)
	if err != nil {
		b.Fatal(err)
	}
	views := []Membership{m2, m1}
	i := 0
	cpu, _ := processCPU()
	for b.Loop() {
		if err := p.Update(views[i&1]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportCPU(b, cpu, 1, "cpu-ns/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3e5, "ns/check-region")
}

// BenchmarkBalance: 100 checkers, 50,000 checks of 2 (1,000 per checker on average). Reports
// the coefficient of variation of checks per checker and the max/mean ratio, for rendezvous
// and for the 160-point ring.
func BenchmarkBalance(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	members := ids(rng, "checker", 100)
	keys := hashes("check", 50000)
	b.Run("rendezvous", func(b *testing.B) {
		r := NewRegion("r", members)
		var counts []int
		for b.Loop() {
			counts = loads(r, keys, 2)
		}
		cv, peak := spread(counts)
		b.ReportMetric(100*cv, "cv_pct")
		b.ReportMetric(peak, "max/mean")
	})
	b.Run("ketama160", func(b *testing.B) {
		r := newKetama(members, 160)
		var counts []int
		for b.Loop() {
			counts = r.loads(keys, 2)
		}
		cv, peak := spread(counts)
		b.ReportMetric(100*cv, "cv_pct")
		b.ReportMetric(peak, "max/mean")
	})
}

// BenchmarkMovement: one checker of 100 leaves, then one joins the 100, over 50,000 checks of
// 2. Reports the checks moved beyond those the leaver held (want 0) and the fraction of
// assignments the joiner took over the ideal 1/101 (want within 0.9 to 1.1).
func BenchmarkMovement(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	members := ids(rng, "checker", 101)
	joiner, members := members[100], members[:100]
	leaver := members[37]
	keys := hashes("check", 50000)
	const k = 2
	var extra, took, held int
	for b.Loop() {
		before := NewRegion("r", members)
		left := NewRegion("r", without(members, leaver))
		joined := NewRegion("r", append(slices.Clone(members), joiner))
		extra, took, held = 0, 0, 0
		var x, y, z []int32
		for _, key := range keys {
			x = before.AppendShard(x[:0], key, k)
			y = left.AppendShard(y[:0], key, k)
			z = joined.AppendShard(z[:0], key, k)
			holds := slices.Contains(x, int32(before.Index(leaver)))
			if holds {
				held++
			}
			if !holds && !sameMembers(before, x, left, y) {
				extra++
			}
			if slices.Contains(z, int32(joined.Index(joiner))) {
				took++
			}
		}
	}
	b.ReportMetric(float64(held), "leaver_held")
	b.ReportMetric(float64(extra), "moved_not_held")
	b.ReportMetric(float64(took)/float64(len(keys)*k)*101, "join_moved/ideal")
}

// sameMembers reports whether shard x of region a and shard y of region b name the same
// checkers in the same order.
func sameMembers(a *Region, x []int32, b *Region, y []int32) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if a.Checker(int(x[i])) != b.Checker(int(y[i])) {
			return false
		}
	}
	return true
}

// BenchmarkMemory: the bytes each structure keeps per member, rendezvous (one hash per
// member) against a ketama ring of 160 eight-byte points, both with their copy of the id list,
// at 100 and 1,000 members, measured on the heap after a collection.
func BenchmarkMemory(b *testing.B) {
	for _, n := range []int{100, 1000} {
		members := ids(rand.New(rand.NewPCG(6, uint64(n))), "checker", n)
		b.Run(fmt.Sprintf("rendezvous/members=%d", n), func(b *testing.B) {
			var r *Region
			for b.Loop() {
				r = NewRegion("r", members)
			}
			before := heapAfterGC()
			r = NewRegion("r", members)
			b.ReportMetric(float64(heapAfterGC()-before)/float64(n), "heap_bytes/member")
			runtime.KeepAlive(r)
		})
		b.Run(fmt.Sprintf("ketama160/members=%d", n), func(b *testing.B) {
			var r *ketama
			for b.Loop() {
				r = newKetama(members, 160)
			}
			before := heapAfterGC()
			r = newKetama(members, 160)
			b.ReportMetric(float64(heapAfterGC()-before)/float64(n), "heap_bytes/member")
			runtime.KeepAlive(r)
		})
	}
}

// BenchmarkPlanMemory: the bytes a Plan keeps per check for 100,000 checks × 3 regions, 2
// per region, beyond the configuration it was built from.
func BenchmarkPlanMemory(b *testing.B) {
	d, m1, _ := recomputeFixture(b)
	var p *Plan
	for b.Loop() {
		var err error
		if p, err = NewPlan(d, m1); err != nil {
			b.Fatal(err)
		}
	}
	p = nil
	before := heapAfterGC()
	p, _ = NewPlan(d, m1)
	b.ReportMetric(float64(heapAfterGC()-before)/float64(len(d.Checks)), "heap_bytes/check")
	runtime.KeepAlive(p)
}
