package sim

import (
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/oracle"
	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
)

// TestStarvedFlips: a healthy endpoint's verdict that turns after the harness stalled at
// least its probe timeout (the demo's 500ms) within the time a verdict takes to turn (3
// intervals, a timeout, the tick and spread: 5s) is starved, with the pair's return after it,
// and so is the calculated check over it; a change after a shorter stall, one long before,
// or none, is a flip.
func TestStarvedFlips(t *testing.T) {
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	flips := []answeraudit.Change{
		{Location: "us-east", Check: "web-eu-west", At: at(10)},
		{Location: "us-east", Check: "web-majority", At: at(10)},
		{Location: "us-east", Check: "web-eu-west", Serving: true, At: at(14)},
		{Location: "eu-west", Check: "web-sa-east", Serving: true, At: at(9)}, // no change away before it
	}
	for _, c := range []struct {
		name    string
		stalls  []oracle.Stall
		starved int
	}{
		{"no stall", nil, 0},
		{"a stall shorter than the timeout", []oracle.Stall{{From: at(8), To: at(8.4)}}, 0},
		{"a stall long before", []oracle.Stall{{From: at(3), To: at(4)}}, 0},
		{"a stall of the timeout", []oracle.Stall{{From: at(8), To: at(8.5)}}, 3},
	} {
		unexplained, starved := starvedFlips(flips, c.stalls, doc)
		if len(starved) != c.starved || len(unexplained)+len(starved) != len(flips) {
			t.Errorf("%s: %d starved, %d unexplained; want %d starved", c.name, len(starved), len(unexplained), c.starved)
		}
	}
}

// TestStallsMerged: the monitor's and the control probe's stalls come back in order, those
// that overlap as one.
func TestStallsMerged(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var m stallMonitor
	m.add(oracle.Stall{From: at(5), To: at(6)})
	m.add(oracle.Stall{From: at(1), To: at(2)})
	m.add(oracle.Stall{From: at(5.5), To: at(7)})
	got, _ := m.recorded()
	if len(got) != 2 || !got[0].From.Equal(at(1)) || !got[1].From.Equal(at(5)) || !got[1].To.Equal(at(7)) {
		t.Errorf("recorded %v; want [1s 2s] and [5s 7s]", got)
	}
}

// TestStallSpell: stalls less than a gap apart make one spell.
func TestStallSpell(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	stalls := []oracle.Stall{{From: at(1), To: at(2)}, {From: at(2.3), To: at(3)}, {From: at(5), To: at(5.5)}}
	if got := stallSpell(stalls, 500*time.Millisecond); got != 2*time.Second {
		t.Errorf("spell %v, want 2s (1s to 3s)", got)
	}
	if got := stallSpell(stalls, 100*time.Millisecond); got != time.Second {
		t.Errorf("spell %v, want 1s", got)
	}
}
