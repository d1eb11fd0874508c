package routing

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// draws is how many selections a distribution test makes. With a fixed seed the counts are
// the same on every run, so the tolerances below cannot flake; they are about five standard
// deviations wide, and far narrower than any systematic error (an off-by-one weight, a
// uniform choice, a biased sample) would produce.
const draws = 100_000

// tally selects draws times with random values from a fixed-seed generator and counts how
// often each record is answered.
func tally(t *testing.T, rs *config.RecordSet, health Health, seed uint64) []int {
	t.Helper()
	src := rand.New(rand.NewPCG(seed, 0x5eed))
	counts := make([]int, len(rs.Records))
	buf := make([]int, 0, len(rs.Records))
	for range draws {
		var err error
		buf, _, err = Select(rs, health, src.Uint64(), buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range buf {
			counts[i]++
		}
	}
	return counts
}

// within fails unless the observed share of each record is within tol of want.
func within(t *testing.T, counts []int, want []float64, tol float64) {
	t.Helper()
	for i, c := range counts {
		got := float64(c) / draws
		if math.Abs(got-want[i]) > tol {
			t.Errorf("record %d: share %.4f, want %.4f ± %.4f (counts %v)", i, got, want[i], tol, counts)
		}
	}
}

func TestWeightedDistribution(t *testing.T) {
	// Weights 1, 2, 3, 4 among the healthy records; an unhealthy heavy record and a healthy
	// zero-weight one get nothing.
	rs := set(config.PolicyWeighted,
		weighted("w1", "", 1), weighted("w2", "", 2), weighted("w3", "c3", 3),
		weighted("down", "cd", 200), weighted("w4", "c4", 4), weighted("zero", "", 0))
	counts := tally(t, rs, down("cd"), 1)
	within(t, counts, []float64{0.1, 0.2, 0.3, 0, 0.4, 0}, 0.007)
	if counts[3] != 0 || counts[5] != 0 {
		t.Errorf("unhealthy or zero-weight record answered: %v", counts)
	}
}

func TestWeightedSkewedDistribution(t *testing.T) {
	// The extreme weights: 255 against 1.
	rs := set(config.PolicyWeighted, weighted("heavy", "", 255), weighted("light", "", 1))
	counts := tally(t, rs, nil, 2)
	within(t, counts, []float64{255.0 / 256, 1.0 / 256}, 0.002)
}

func TestAllZeroWeightsEqual(t *testing.T) {
	rs := set(config.PolicyWeighted,
		weighted("a", "", 0), weighted("b", "", 0), weighted("c", "", 0), weighted("d", "", 0))
	counts := tally(t, rs, nil, 3)
	within(t, counts, []float64{0.25, 0.25, 0.25, 0.25}, 0.007)
}

func TestWeightedLastResortDistribution(t *testing.T) {
	// Nothing healthy: choose by weight among all, as if all were healthy.
	rs := set(config.PolicyWeighted,
		weighted("a", "ca", 1), weighted("b", "cb", 3), weighted("z", "cz", 0))
	counts := tally(t, rs, down("ca", "cb", "cz"), 4)
	within(t, counts, []float64{0.25, 0.75, 0}, 0.007)
}

func TestMultivalueSampleUniform(t *testing.T) {
	// Ten healthy records, eight answered: each is in the answer with probability 8/10, and
	// each position of the answer holds each record with probability 1/10.
	var recs []config.Record
	for i := range 10 {
		recs = append(recs, rec(string(rune('a'+i)), ""))
	}
	rs := set(config.PolicyMultivalue, recs...)
	src := rand.New(rand.NewPCG(5, 0x5eed))
	counts := make([]int, 10)
	first := make([]int, 10)
	buf := make([]int, 0, 10)
	for range draws {
		buf, _, _ = Select(rs, nil, src.Uint64(), buf)
		if len(buf) != config.MaxMultivalueAnswers {
			t.Fatalf("answer of %d records, want %d", len(buf), config.MaxMultivalueAnswers)
		}
		seen := map[int]bool{}
		for _, i := range buf {
			if seen[i] {
				t.Fatalf("record %d answered twice: %v", i, buf)
			}
			seen[i] = true
			counts[i]++
		}
		first[buf[0]]++
	}
	want := make([]float64, 10)
	for i := range want {
		want[i] = 0.8
	}
	within(t, counts, want, 0.007)
	for i := range want {
		want[i] = 0.1
	}
	within(t, first, want, 0.005)
}
