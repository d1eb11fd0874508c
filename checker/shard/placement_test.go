package shard

import (
	"slices"
	"testing"
)

func TestPlacement(t *testing.T) {
	locs := []string{"gru", "iad", "fra", "sin", "syd", "nrt"}
	p := NewPlacement(2048, shuffledCopy(locs), 2)
	q := NewPlacement(2048, locs, 2)
	hosted := map[string]int{}
	for s := range 2048 {
		got := p.Locations(s)
		if len(got) != 2 || got[0] == got[1] {
			t.Fatalf("server %d on %v, want 2 distinct locations", s, got)
		}
		if !slices.Equal(got, q.Locations(s)) {
			t.Fatalf("server %d: placement depends on the order of locations: %v vs %v", s, got, q.Locations(s))
		}
		for _, l := range got {
			hosted[l]++
			if !slices.Contains(p.Servers(l), s) {
				t.Fatalf("server %d placed on %s, which does not list it", s, l)
			}
		}
	}
	for _, l := range locs {
		if n := len(p.Servers(l)); n != hosted[l] || n < 2048*2/6*8/10 || n > 2048*2/6*12/10 {
			t.Errorf("%s hosts %d servers (placed %d), want about %d", l, n, hosted[l], 2048*2/6)
		}
	}
	if p.Servers("nowhere") != nil || p.Locations(-1) != nil || p.Locations(2048) != nil {
		t.Error("unknown location or server gave a placement")
	}
	// A new location takes servers only for itself; nothing moves between the old ones.
	grown := NewPlacement(2048, append(slices.Clone(locs), "jnb"), 2)
	moved := 0
	for s := range 2048 {
		before, after := p.Locations(s), grown.Locations(s)
		if slices.Contains(after, "jnb") {
			moved++
			continue
		}
		if !slices.Equal(before, after) {
			t.Fatalf("server %d moved %v -> %v without involving the new location", s, before, after)
		}
	}
	if moved == 0 || moved > 2048*2/7*13/10 {
		t.Errorf("the new location took %d servers, want about %d", moved, 2048*2/7)
	}
	if got := NewPlacement(4, []string{"only"}, 3).Locations(3); !slices.Equal(got, []string{"only"}) {
		t.Errorf("one location: %v", got)
	}
}

func shuffledCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Reverse(c)
	c[0], c[len(c)/2] = c[len(c)/2], c[0]
	return c
}
