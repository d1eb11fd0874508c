package sim

import (
	"testing"
	"time"
)

// TestStallStretch: one long gap is a stall, and so is a stretch of short late gaps that lose
// more than stallMin in all; ticks on time, or a stretch that lost less, are none.
func TestStallStretch(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	feed := func(gaps ...time.Duration) []time.Duration {
		var m stallMonitor
		at := t0
		for _, g := range gaps {
			m.tick(at, at.Add(g))
			at = at.Add(g)
		}
		m.tick(at, at.Add(stallTick))
		var out []time.Duration
		for _, s := range m.stalls {
			out = append(out, s.To.Sub(s.From))
		}
		return out
	}
	repeat := func(g time.Duration, n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = g
		}
		return out
	}
	cases := []struct {
		name string
		gaps []time.Duration
		want []time.Duration
	}{
		{"on time", repeat(stallTick, 100), nil},
		{"one long gap", []time.Duration{stallTick, 400 * time.Millisecond, stallTick}, []time.Duration{400 * time.Millisecond}},
		{"many short late gaps", repeat(60*time.Millisecond, 10), []time.Duration{600 * time.Millisecond}},
		{"a few short late gaps", repeat(60*time.Millisecond, 4), nil},
		{"gaps just under late", repeat(slowGap, 100), nil},
		{"two stretches", append(append(repeat(100*time.Millisecond, 4), stallTick), repeat(100*time.Millisecond, 3)...), []time.Duration{400 * time.Millisecond, 300 * time.Millisecond}},
	}
	for _, c := range cases {
		got := feed(c.gaps...)
		if len(got) != len(c.want) {
			t.Errorf("%s: stalls %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: stalls %v, want %v", c.name, got, c.want)
			}
		}
	}
}
