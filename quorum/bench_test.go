package quorum

import (
	"strconv"
	"testing"
	"time"
)

// benchChecks is the target: one location evaluating 100,000 checks of 9 reports each.
const benchChecks = 100_000

// benchLocation builds the table of one location: every check has 3 regions × 3 checkers out of
// 30 per region, each report from a shared pool of checker names. About one report in nine is
// stale, one in 27 withdrawn (absent from the table, as gossip deletes it: the assignment still
// expects it, so it is never heard), and a third of the endpoints are down. The expected
// checkers are the same nine, listed in another order.
func benchLocation() (reports [][]Report, expected [][]string, now time.Time) {
	now = t0
	regions := []string{"us-east", "eu-west", "sa-east"}
	names := make([][]string, len(regions))
	for r, region := range regions {
		for i := range 30 {
			names[r] = append(names[r], region+"-"+strconv.Itoa(i))
		}
	}
	reports = make([][]Report, benchChecks)
	expected = make([][]string, benchChecks)
	for c := range reports {
		rs := make([]Report, 0, 9)
		exp := make([]string, 0, 9)
		for r, region := range regions {
			for k := range 3 {
				id := names[r][(c*7+k*11+r)%30]
				n := r*3 + k
				exp = append(exp, id)
				if (c+n)%27 == 5 {
					continue // withdrawn
				}
				heard := now.Add(-time.Duration(n) * time.Second)
				if (c+n)%9 == 0 {
					heard = now.Add(-time.Minute)
				}
				rs = append(rs, Report{
					Checker:      id,
					Region:       region,
					Healthy:      c%3 != 0,
					Latency:      time.Duration(10+n) * time.Millisecond,
					Sequence:     uint64(c + n),
					LastProgress: heard,
				})
			}
		}
		// The assignment lists the checkers in its own order, not the table's.
		exp = append(exp[4:], exp[:4]...)
		reports[c], expected[c] = rs, exp
	}
	return reports, expected, now
}

// BenchmarkLocation evaluates every check of one location once per op: the compact Evaluate,
// the same without the expected checkers, and Explain with all its evidence. Run it as the
// issue asks: go test -run '^$' -bench Location -benchmem -cpu 1 ./quorum/
func BenchmarkLocation(b *testing.B) {
	reports, expected, now := benchLocation()
	p := defaultPolicy()
	verdicts := make([]Verdict, benchChecks)
	perCheck := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchChecks, "ns/check")
	}
	b.Run("Evaluate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for c := range reports {
				verdicts[c] = Evaluate(p, reports[c], expected[c], verdicts[c], now)
			}
		}
		perCheck(b)
		healthy := 0
		for _, v := range verdicts {
			if v.State == StateHealthy {
				healthy++
			}
		}
		if healthy == 0 || healthy == benchChecks {
			b.Fatalf("%d of %d checks healthy: the table does not exercise both outcomes", healthy, benchChecks)
		}
	})
	b.Run("EvaluateNoExpected", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for c := range reports {
				verdicts[c] = Evaluate(p, reports[c], nil, verdicts[c], now)
			}
		}
		perCheck(b)
	})
	b.Run("Explain", func(b *testing.B) {
		b.ReportAllocs()
		var e Explanation
		for b.Loop() {
			for c := range reports {
				e = Explain(p, reports[c], expected[c], verdicts[c], now)
			}
		}
		perCheck(b)
		if e.Counts.Fresh+e.Counts.Stale+e.Counts.NeverHeard != 9 {
			b.Fatalf("last explanation counted %+v", e.Counts)
		}
	})
}
