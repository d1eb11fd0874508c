package oracle

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/regions"
)

// demoModel returns the model of the demo story's network.
func demoModel(t *testing.T) *model {
	s := newStory(t, 10)
	return newModel(&s.run, DefaultBounds())
}

// worldOf returns the world after events (their instants do not matter here).
func worldOf(m *model, events ...Event) *world {
	w := initialWorld(m.topo)
	for _, e := range events {
		w.apply(e)
	}
	return w
}

func TestHeard(t *testing.T) {
	m := demoModel(t)
	stopEU := []Event{{Kind: EventKill, Node: "eu-west"}}
	for i := 1; i <= 3; i++ {
		stopEU = append(stopEU, Event{Kind: EventKill, Node: fmt.Sprintf("eu-west-checker-%d", i)})
	}
	tests := []struct {
		name     string
		events   []Event
		from, to string
		want     tri
	}{
		{"whole", nil, "us-east", "sa-east", yes},
		{"own region, isolated", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "sa-east"}}}, "sa-east", "sa-east", yes},
		{"isolated", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "sa-east"}}}, "sa-east", "us-east", no},
		{"non-transitive: relayed", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "us-east", B: "sa-east"}}}, "us-east", "sa-east", yes},
		{"non-transitive, nothing runs in the relay", append([]Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "us-east", B: "sa-east"}}}, stopEU...), "us-east", "sa-east", no},
		{"one-way, relayed", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.CutOneWay, A: "us-east", B: "sa-east"}}}, "sa-east", "us-east", yes},
		{"one-way against, no relay", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "eu-west"}}, {Kind: EventLink, Link: regions.Fault{Kind: regions.CutOneWay, A: "us-east", B: "sa-east"}}}, "sa-east", "us-east", either},
		{"one-way along, no relay", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "eu-west"}}, {Kind: EventLink, Link: regions.Fault{Kind: regions.CutOneWay, A: "us-east", B: "sa-east"}}}, "us-east", "sa-east", no},
		{"light loss", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "eu-west"}}, {Kind: EventLink, Link: regions.Fault{Kind: regions.Loss, A: "us-east", B: "sa-east", Loss: 5}}}, "us-east", "sa-east", yes},
		{"heavy loss", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "eu-west"}}, {Kind: EventLink, Link: regions.Fault{Kind: regions.Loss, A: "us-east", B: "sa-east", Loss: 30}}}, "us-east", "sa-east", either},
		{"healed", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "sa-east"}}, {Kind: EventLink, Link: regions.Fault{Kind: regions.Heal, A: "sa-east", B: "us-east"}}}, "sa-east", "us-east", yes},
	}
	for _, tt := range tests {
		heard, _ := m.heardFrom(worldOf(m, tt.events...))
		if got := heard[[2]string{tt.from, tt.to}]; got != tt.want {
			t.Errorf("%s: %s hears %s: %v, want %v", tt.name, tt.to, tt.from, got, tt.want)
		}
	}
}

func TestProbe(t *testing.T) {
	m := demoModel(t)
	c := params(m.checks["web-sa-east"]) // http, 500ms timeout
	target := Target{Name: "sa-east", Region: "sa-east"}
	lat := func(d, j time.Duration) Event {
		return Event{Kind: EventLink, Link: regions.Fault{Kind: regions.Latency, A: "us-east", B: "sa-east", Delay: d, Jitter: j}}
	}
	tests := []struct {
		name   string
		events []Event
		want   tri
	}{
		{"whole", nil, yes},
		{"target down", []Event{{Kind: EventTargetDown, Target: "sa-east"}}, no},
		{"cut", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Cut, A: "us-east", B: "sa-east"}}}, no},
		{"one-way out", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.CutOneWay, A: "us-east", B: "sa-east"}}}, no},
		{"one-way back", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.CutOneWay, A: "sa-east", B: "us-east"}}}, no},
		{"loss", []Event{{Kind: EventLink, Link: regions.Fault{Kind: regions.Loss, A: "us-east", B: "sa-east", Loss: 1}}}, either},
		{"a short delay", []Event{lat(20*time.Millisecond, 5*time.Millisecond)}, yes},
		{"150±50ms against 500ms", []Event{lat(150*time.Millisecond, 50*time.Millisecond)}, either},
		{"longer than the timeout", []Event{lat(300*time.Millisecond, 10*time.Millisecond)}, no},
		{"latency ended", []Event{lat(300*time.Millisecond, 0), lat(0, 0)}, yes},
	}
	for _, tt := range tests {
		if got, _ := m.probe(worldOf(m, tt.events...), "us-east", target, c); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestVerdicts(t *testing.T) {
	base := config.DefaultCheck()
	base.ID = "c"
	with := func(f func(*config.Check)) *config.Check {
		c := base
		f(&c)
		return &c
	}
	region := func(heard, probe tri, n int) regionView {
		return regionView{heard: heard, probe: probe, nLo: n, nHi: n}
	}
	tests := []struct {
		name  string
		c     *config.Check
		v     view
		want  served
		short bool
	}{
		{"every region healthy", &base, view{region(yes, yes, 2), region(yes, yes, 2), region(yes, yes, 2)}, servedOn, false},
		{"one region of three: 33% > 18%", &base, view{region(yes, yes, 2), region(yes, no, 2), region(yes, no, 2)}, servedOn, false},
		{"one checker of six: 17% is not more than 18%", &base, view{region(yes, yes, 1), region(yes, no, 3), region(yes, no, 2)}, servedOff, false},
		{"only the unreaching regions are heard", &base, view{region(no, yes, 2), region(yes, no, 2), region(yes, no, 2)}, servedOff, false},
		{"nothing heard", &base, view{region(no, yes, 2), region(no, no, 2)}, 0, true},
		{"unsure probes", &base, view{region(yes, either, 2), region(yes, no, 2), region(yes, no, 2)}, servedAny, false},
		{"unsure hearing of the only healthy region", &base, view{region(either, yes, 2), region(yes, no, 2)}, servedAny, false},
		{"min reporters", with(func(c *config.Check) { c.MinReporters = 3 }), view{region(yes, yes, 2), region(no, yes, 2)}, 0, true},
		{"inverted", with(func(c *config.Check) { c.Inverted = true }), view{region(yes, no, 2)}, servedOn, false},
		{"disabled", with(func(c *config.Check) { c.Disabled = true }), view{region(yes, no, 2)}, servedOn, false},
		{"threshold 50%", with(func(c *config.Check) { c.HealthyThreshold = 0.5 }), view{region(yes, yes, 2), region(yes, no, 2)}, servedOff, false},
		{"handoff: 1 to 3 reports", &base, view{regionView{heard: yes, probe: yes, nLo: 1, nHi: 3}, region(yes, no, 2), region(yes, no, 2)}, servedOn, false},
	}
	for _, tt := range tests {
		got, short := verdicts(tt.c, tt.v)
		if got != tt.want || short != tt.short {
			t.Errorf("%s: %v (short %v), want %v (short %v)", tt.name, got, short, tt.want, tt.short)
		}
	}
}

func TestCombine(t *testing.T) {
	calc := &config.Check{ID: "m", Protocol: config.ProtocolCalculated, Children: []string{"a", "b", "c"}, MinHealthy: 2}
	tests := []struct {
		children []served
		inverted bool
		want     served
	}{
		{[]served{servedOn, servedOn, servedOff}, false, servedOn},
		{[]served{servedOn, servedOff, servedOff}, false, servedOff},
		{[]served{servedOn, servedAny, servedOff}, false, servedAny},
		{[]served{servedOn, servedOn, servedOff}, true, servedOff},
		{[]served{servedOn, servedAny, servedOff}, true, servedAny},
	}
	for _, tt := range tests {
		c := *calc
		c.Inverted = tt.inverted
		if got := combine(&c, tt.children); got != tt.want {
			t.Errorf("%v inverted %v: %v, want %v", tt.children, tt.inverted, got, tt.want)
		}
	}
}

// The transition window of a target going down is the detection bound of its check: interval
// × failure_threshold + timeout, plus the gossip spread, the evaluation tick and the slack;
// coming back, interval
// × success_threshold + timeout.
func TestWindow(t *testing.T) {
	s := newStory(t, 30)
	s.event(10, Event{Kind: EventTargetDown, Target: "us-east"})
	s.event(20, Event{Kind: EventTargetUp, Target: "us-east"})
	b := DefaultBounds()
	m := newModel(&s.run, b)
	tl := buildTimelines(m, &s.run)
	tr := tl.lanes["eu-west"]["web-us-east"].trans
	if got, want := tr[0].window, 3*time.Second+500*time.Millisecond+b.Spread+b.Tick+b.Slack; got != want {
		t.Errorf("down: %v, want %v", got, want)
	}
	if got, want := tr[1].window, 2*time.Second+500*time.Millisecond+b.Spread+b.Tick+b.Slack; got != want {
		t.Errorf("up: %v, want %v", got, want)
	}
	if got := tl.lanes["eu-west"]["web-eu-west"].trans[0].window; got != 0 {
		t.Errorf("another check: %v, want nothing", got)
	}
}
