package netlab

import (
	"strings"
	"testing"
)

// TestStory is make test's real-process run: the story of testdata/story.txt (the us-east -
// sa-east link cut while eu-west reaches both, then sa-east cut off from both, then every
// link healed) on real processes in network namespaces, judged by the oracle: no wrong
// answer, no flip, unanswered queries within their bound, every process alive. Beside it,
// the same story runs on a binary built with the planted bug MUTANT-NOFRESHNESS
// (quorum/fresh_mutant.go: a report heard once is fresh forever), which the oracle must fail
// with wrong answers: the proof that this test can fail.
func TestStory(t *testing.T) {
	needReal(t)
	sc, err := Scenario("story", DefaultRegions())
	if err != nil {
		t.Fatal(err)
	}
	normal, mutant := vigilBinary(t, ""), vigilBinary(t, "vigil_mutant_nofreshness")
	run := func(t *testing.T, bin string) Result {
		var tl strings.Builder
		res, err := Run(t.Context(), Options{Script: sc, Binary: bin, Timeline: &tl})
		if err != nil {
			t.Fatalf("%v\n%s", err, tl.String())
		}
		if len(res.Unplanned) > 0 {
			t.Errorf("processes exited on their own: %q", res.Unplanned)
		}
		if res.Report == nil || res.Writes == nil {
			t.Fatalf("no judgement:\n%s", tl.String())
		}
		if !res.Writes.OK() || res.Writes.Acknowledged < 50 {
			t.Errorf("control-plane writes: %+v, want every acknowledged one (at least 50) checked, none lost", *res.Writes)
		}
		return res
	}
	t.Run("normal", func(t *testing.T) {
		t.Parallel()
		res := run(t, normal)
		if !res.Report.OK() || res.Report.Judged < 1000 {
			var b strings.Builder
			_ = res.Report.Write(&b)
			t.Errorf("the story failed on the normal binary (%d queries judged):\n%s", res.Report.Judged, b.String())
		}
	})
	t.Run("planted-bug", func(t *testing.T) {
		t.Parallel()
		res := run(t, mutant)
		if res.Report.OK() || len(res.Report.Wrong) == 0 {
			var b strings.Builder
			_ = res.Report.Write(&b)
			t.Errorf("the oracle passed a binary that counts stale reports as fresh: %d wrong answers\n%s", len(res.Report.Wrong), b.String())
		}
	})
}
