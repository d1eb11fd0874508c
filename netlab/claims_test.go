package netlab

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/oracle"
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
		{Event: oracle.Event{Kind: oracle.EventCut, A: "us-east"}, ByLocation: map[string]time.Duration{"a": 9 * time.Second}},
		{Event: oracle.Event{Kind: oracle.EventTargetUp, Target: "us-east"}, Repair: true, ByLocation: map[string]time.Duration{"a": 9 * time.Second}},
	}}
	got := SlowDetections(run, rep)
	if len(got) != 2 || !strings.Contains(got[0], "b took 5.1s, more than 5s") || !strings.Contains(got[1], "c never showed it") {
		t.Errorf("SlowDetections: %q; want b (5.1s > 1s x 3 + 2s) and c (missing), nothing of the cut or the repair", got)
	}
}
