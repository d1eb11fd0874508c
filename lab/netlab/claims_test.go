package netlab

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/lab/oracle"
	"github.com/vigil-dns/vigil/regions"
)

func TestSlowDetections(t *testing.T) {
	doc, err := Document(DefaultRegions())
	if err != nil {
		t.Fatal(err)
	}
	run := &oracle.Run{Document: doc, Topology: oracle.Topology{Checks: map[string]string{CheckID("us-east"): "us-east"}}}
	down := oracle.Event{Kind: oracle.EventTargetDown, Target: "us-east"}
	rep := &oracle.Report{Timings: []oracle.Timing{
		{Event: down, ByLocation: map[string]time.Duration{"a": 4 * time.Second, "b": 5100 * time.Millisecond}, Missing: []string{"c"}},
		{Event: oracle.Event{Kind: oracle.EventLink, Link: regions.Fault{Kind: regions.Cut, A: "us-east"}}, ByLocation: map[string]time.Duration{"a": 9 * time.Second}},
		{Event: oracle.Event{Kind: oracle.EventTargetUp, Target: "us-east"}, Repair: true, ByLocation: map[string]time.Duration{"a": 9 * time.Second}},
	}}
	got := SlowDetections(run, rep)
	if len(got) != 2 || !strings.Contains(got[0], "b took 5.1s, more than 5s") || !strings.Contains(got[1], "c never showed it") {
		t.Errorf("SlowDetections: %q; want b (5.1s > 1s x 3 + 2s) and c (missing), nothing of the cut or the repair", got)
	}
}

func TestWriteRow(t *testing.T) {
	res := &Result{
		Report: &oracle.Report{Judged: 900, Unanswered: map[string]oracle.Unanswered{}, Timings: []oracle.Timing{
			{Event: oracle.Event{Kind: oracle.EventLink, Link: regions.Fault{Kind: regions.Heal}}, Group: []oracle.Event{{Kind: oracle.EventLink, Link: regions.Fault{Kind: regions.Heal}}, {Kind: oracle.EventLink, Link: regions.Fault{Kind: regions.Cut, A: "sa-east"}}}, Bound: 7500 * time.Millisecond, ByLocation: map[string]time.Duration{"a": 5340 * time.Millisecond, "b": 4 * time.Second}},
			{Event: oracle.Event{Kind: oracle.EventLink, Link: regions.Fault{Kind: regions.Heal}}, Repair: true, Bound: 22500 * time.Millisecond, ByLocation: map[string]time.Duration{"a": 1170 * time.Millisecond}},
		}},
		Writes: &oracle.WriteStats{Acknowledged: 305, Checked: 305},
	}
	var b strings.Builder
	if err := WriteRow(&b, "isolated", "vigil sim -real isolated", res); err != nil {
		t.Fatal(err)
	}
	want := "| isolated | 0 | 0 | 0 of 900 (+0 while a location was down) | 5.34 s (heal, cut sa-east; bound 7.5 s) | 1.17 s (heal; bound 22.5 s) | 305/0 of 305 acknowledged | `vigil sim -real isolated` |\n"
	if b.String() != want {
		t.Errorf("row:\n%s\nwant\n%s", b.String(), want)
	}
}
