package status

import (
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
)

// TestProbes serves a real checker's probes of two real HTTP servers, one answering 200 and
// one 503.
func TestProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("probes real HTTP servers for about a second")
	}
	tc := startChecker(t)
	a, _, _ := newTestAPI(t, nil, tc)
	code, body := get(t, a, "/v1/probes")
	if code != 200 {
		t.Fatalf("probes: %d %s", code, body)
	}
	var l ProbeList
	decodeStrict(t, body, &l)
	if l.Checker != "loc-us" || !l.Self.Healthy || len(l.Probes) != 2 {
		t.Fatalf("probes %+v", l)
	}
	down, up := l.Probes[0], l.Probes[1]
	if up.Check != "up" || up.Status != "healthy" || up.Protocol != "http" || up.Interval.Std() != time.Second ||
		up.Last == nil || !up.Last.Healthy || up.Last.Reason != "ok" || up.Last.StatusCode != 200 {
		t.Errorf("up: %+v last %+v", up, up.Last)
	}
	if down.Check != "down" || down.Status != "unhealthy" || down.Last == nil || down.Last.Healthy ||
		down.Last.Reason != "status" || down.Last.StatusCode != 503 || down.Last.Message == "" {
		t.Errorf("down: %+v last %+v", down, down.Last)
	}
	for _, p := range l.Probes {
		if p.Last == nil {
			continue
		}
		tm := p.Last.Timings
		if tm.Total <= 0 || tm.Connect <= 0 || tm.FirstByte < tm.Connect || tm.Total < tm.FirstByte || p.Last.Address == "" || p.Last.At.IsZero() {
			t.Errorf("%s timings %+v address %q at %v", p.Check, tm, p.Last.Address, p.Last.At)
		}
		if p.Target != p.Last.Address {
			t.Errorf("%s target %s, probed %s", p.Check, p.Target, p.Last.Address)
		}
	}
	code, body = get(t, a, "/v1/self")
	var s checker.SelfHealth
	decodeStrict(t, body, &s)
	if code != 200 || !s.Healthy {
		t.Errorf("self: %d %+v", code, s)
	}
}
