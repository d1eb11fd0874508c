package shard

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

func TestAnalyze(t *testing.T) {
	items := map[string][]int{
		"me":    {1, 2, 3},
		"twin":  {1, 2, 3},
		"sub":   {2, 3},
		"one":   {3, 7, 8},
		"two":   {1, 2, 9},
		"none":  {4, 5, 6},
		"empty": {},
	}
	order := []string{"me", "twin", "sub", "one", "two", "none", "empty"}
	all := func(yield func(string, []int) bool) {
		for _, n := range order {
			if !yield(n, items[n]) {
				return
			}
		}
	}
	br := Analyze("me", []int{3, 2, 1, 2}, all, 3)
	if br.Others != 6 || br.Contained != 2 || !slices.Equal(br.Histogram, []int{2, 1, 2, 1}) {
		t.Errorf("others %d contained %d histogram %v; want 6, 2 (twin, sub), [2 1 2 1]", br.Others, br.Contained, br.Histogram)
	}
	want := []Neighbor{{"twin", 3, 3}, {"sub", 2, 2}, {"two", 2, 3}}
	if !slices.Equal(br.Neighbors, want) || br.MoreNeighbors != 1 {
		t.Errorf("neighbors %v (+%d), want %v (+1)", br.Neighbors, br.MoreNeighbors, want)
	}
	if all := Analyze("me", items["me"], all, -1); len(all.Neighbors) != 4 || all.MoreNeighbors != 0 {
		t.Errorf("no limit: %d neighbors, %d more", len(all.Neighbors), all.MoreNeighbors)
	}
}

// Shuffle sharding of checks in one region of 8 checkers, 2 per check: a poisoned check's two
// checkers take down only checks with the same pair; most checks share nothing with it.
func TestPlanBlastRadius(t *testing.T) {
	var checks []config.Check
	for i := range 280 {
		checks = append(checks, check(fmt.Sprintf("c%03d", i), 2))
	}
	p, err := NewPlan(doc([]string{"r"}, checks...), Membership{"r": {"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"}})
	if err != nil {
		t.Fatal(err)
	}
	br, err := p.BlastRadius("c000", -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(br.Workers) != 2 || br.Others != 279 || len(br.Histogram) != 3 {
		t.Fatalf("workers %v, others %d, histogram %v", br.Workers, br.Others, br.Histogram)
	}
	// Count independently: the same pair contains, one shared worker is a partial hit.
	mine := p.Shard("c000", "r")
	hist := make([]int, 3)
	for _, c := range p.Checks()[1:] {
		n := 0
		for _, w := range p.Shard(c, "r") {
			if slices.Contains(mine, w) {
				n++
			}
		}
		hist[n]++
	}
	if !slices.Equal(hist, br.Histogram) || br.Contained != hist[2] {
		t.Errorf("histogram %v contained %d, counted %v", br.Histogram, br.Contained, hist)
	}
	// 28 possible pairs: about 1 check in 28 shares the whole shard, about 12 in 28 one worker.
	if br.Contained > 279/28*2 || hist[1] < 279*12/28*7/10 || hist[0] < 279*15/28*7/10 {
		t.Errorf("distribution %v is far from shuffle sharding's 1/28, 12/28, 15/28", hist)
	}
	for _, w := range br.Workers {
		if w != "r/"+mine[0] && w != "r/"+mine[1] {
			t.Errorf("worker %s is not in the shard %v", w, mine)
		}
	}
	if _, err := p.BlastRadius("missing", 1); err == nil {
		t.Error("blast radius of an unknown check")
	}
}
