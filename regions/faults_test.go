package regions

import (
	"strings"
	"testing"
	"time"
)

var three = []string{"us-east", "eu-west", "sa-east"}

// Every fault reads back as it was written.
func TestFaultTextRoundTrip(t *testing.T) {
	for _, text := range []string{
		"cut sa-east", "cut us-east sa-east", "cut-oneway us-east sa-east", "loss eu-west sa-east 12.5",
		"loss eu-west sa-east 0", "latency us-east eu-west 150ms", "latency us-east eu-west 150ms 50ms",
		"latency us-east eu-west 0s", "heal",
	} {
		f, err := ParseFault(strings.Fields(text), three)
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		if got := f.String(); got != text {
			t.Errorf("%s: reads back as %q", text, got)
		}
		if err := f.Validate(three); err != nil {
			t.Errorf("%s: parsed, then invalid: %v", text, err)
		}
	}
	if f, err := ParseFault([]string{"loss", "us-east", "sa-east", "5%"}, three); err != nil || f.Loss != 5 {
		t.Errorf("loss 5%%: %+v, %v", f, err)
	}
}

func TestParseFaultErrors(t *testing.T) {
	for text, want := range map[string]string{
		"":                                  "no fault (faults: cut, cut-oneway, loss, latency, heal)",
		"explode":                           `unknown fault "explode" (faults: cut, cut-oneway, loss, latency, heal)`,
		"cut":                               "cut takes one region or two, got 0 arguments",
		"cut mars":                          `cut: unknown region "mars" (regions: us-east, eu-west, sa-east)`,
		"cut us-east us-east":               "cut: a region cannot be cut from itself",
		"heal us-east":                      "heal takes no arguments, got 1",
		"cut-oneway us-east":                "cut-oneway takes 2 arguments, got 1",
		"cut-oneway us-east us-east":        "cut-oneway: two different regions, got us-east twice",
		"loss us-east sa-east 101":          `loss: "101" is not a percentage from 0 to 100`,
		"loss us-east sa-east x":            `loss: "x" is not a percentage from 0 to 100`,
		"latency us-east sa-east 11s":       `latency: "11s" is not a duration from 0 to 10s`,
		"latency us-east sa-east 50ms 51ms": `latency: jitter "51ms" is not a duration from 0 to the latency (50ms)`,
		"latency us-east sa-east 1 2 3":     "latency takes 3 arguments, got 5",
	} {
		_, err := ParseFault(strings.Fields(text), three)
		if err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}

// TestFaultsApply follows the faults in force through every kind, by direction.
func TestFaultsApply(t *testing.T) {
	f := NewFaults(three...)
	apply := func(x Fault) {
		t.Helper()
		if err := f.Apply(x); err != nil {
			t.Fatalf("%v: %v", x, err)
		}
	}
	cut := func() string {
		var out []string
		for _, l := range f.Faulty() {
			if f.Of(l).Cut {
				out = append(out, l.From+">"+l.To)
			}
		}
		return strings.Join(out, " ")
	}
	apply(Fault{Kind: Cut, A: "sa-east"})
	if got, want := cut(), "eu-west>sa-east sa-east>eu-west sa-east>us-east us-east>sa-east"; got != want {
		t.Errorf("cut sa-east: %s, want %s", got, want)
	}
	if f.Carries("us-east", "sa-east") || !f.Carries("us-east", "eu-west") || !f.Carries("sa-east", "sa-east") {
		t.Error("cut sa-east: Carries is wrong")
	}
	apply(Fault{Kind: Heal, A: "sa-east", B: "eu-west"})
	if got, want := cut(), "sa-east>us-east us-east>sa-east"; got != want {
		t.Errorf("heal sa-east eu-west: %s, want %s", got, want)
	}
	apply(Fault{Kind: Heal})
	apply(Fault{Kind: CutOneWay, A: "us-east", B: "sa-east"})
	if got, want := cut(), "us-east>sa-east"; got != want {
		t.Errorf("cut-oneway: %s, want %s", got, want)
	}
	apply(Fault{Kind: Loss, A: "us-east", B: "sa-east", Loss: 20})
	apply(Fault{Kind: Latency, A: "eu-west", B: "sa-east", Delay: 80 * time.Millisecond, Jitter: time.Millisecond})
	if s := f.Of(Link{"sa-east", "us-east"}); s != (State{Loss: 20}) {
		t.Errorf("sa-east -> us-east: %+v, want 20%% loss only", s)
	}
	if s := f.Of(Link{"us-east", "sa-east"}); s != (State{Cut: true, Loss: 20}) {
		t.Errorf("us-east -> sa-east: %+v, want cut and 20%% loss", s)
	}
	if s := f.Of(Link{"sa-east", "eu-west"}); s.Delay != 80*time.Millisecond || s.Jitter != time.Millisecond {
		t.Errorf("sa-east -> eu-west: %+v, want 80ms±1ms", s)
	}
	c := f.Clone()
	apply(Fault{Kind: Loss, A: "us-east", B: "sa-east"})
	apply(Fault{Kind: Latency, A: "eu-west", B: "sa-east"})
	if got := len(f.Faulty()); got != 1 || !f.Active() {
		t.Errorf("loss and latency 0 leave %d faulty directions, want the one-way cut", got)
	}
	if c.Of(Link{"sa-east", "us-east"}).Loss != 20 {
		t.Error("a clone changed with its original")
	}
	apply(Fault{Kind: Heal})
	if f.Active() {
		t.Errorf("heal leaves %v", f.Faulty())
	}
	for _, bad := range []Fault{
		{Kind: "explode"}, {Kind: Cut}, {Kind: Cut, A: "mars"}, {Kind: CutOneWay, A: "us-east"},
		{Kind: Loss, A: "us-east", B: "sa-east", Loss: 101}, {Kind: Latency, A: "us-east", B: "sa-east", Delay: -1},
		{Kind: Heal, B: "us-east"},
	} {
		if err := f.Apply(bad); err == nil {
			t.Errorf("%+v: applied", bad)
		}
	}
}

func TestRepair(t *testing.T) {
	for f, want := range map[Fault]bool{
		{Kind: Heal}: true, {Kind: Loss}: true, {Kind: Latency}: true,
		{Kind: Loss, Loss: 1}: false, {Kind: Latency, Jitter: 1}: false, {Kind: Cut}: false, {Kind: CutOneWay}: false,
	} {
		if f.Repair() != want {
			t.Errorf("%+v: Repair %v", f, !want)
		}
	}
}
