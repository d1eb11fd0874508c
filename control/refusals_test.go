package control

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
)

// TestRefusalLogRates: a source network records refusalBurst refusals at once, counts the
// rest, and once its rate allows again records a summary of them before the next refusal;
// other networks are not held back by it; the log stays within maxRefusals; sources beyond
// maxRefusalSources share one rate.
func TestRefusalLogRates(t *testing.T) {
	l := newRefusalLog()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(src, who string, at time.Time, known bool) bool {
		return l.record(&state.RefusalEntry{Time: at, Code: 401, Principal: who, Source: src, Reason: "bad\x1b[31m token"}, known)
	}
	got := 0
	for i := range 50 {
		if rec(fmt.Sprintf("192.0.2.%d", i), "unknown token", at, false) {
			got++
		}
	}
	if got != refusalBurst || l.suppressed != 50-refusalBurst {
		t.Fatalf("one /24: %d recorded, %d suppressed; want %d and %d", got, l.suppressed, refusalBurst, 50-refusalBurst)
	}
	if !rec("198.51.100.1", "unknown token", at, false) {
		t.Fatal("another /24 was held back")
	}
	if !rec("192.0.2.1", "unknown token", at.Add(refusalEvery), false) {
		t.Fatal("the /24 did not record again after its interval")
	}
	v := l.view("v0")
	sum := v.Unknown[len(v.Unknown)-2]
	if sum.Suppressed != 50-refusalBurst || !strings.Contains(sum.Reason, "40 more refusals from 192.0.2.0/24") {
		t.Fatalf("summary %+v", sum)
	}
	if strings.ContainsRune(v.Unknown[0].Reason, 0x1b) {
		t.Fatalf("reason keeps a control character: %q", v.Unknown[0].Reason)
	}
	for i := range 3 * maxRefusalSources {
		rec(fmt.Sprintf("10.%d.%d.1", i/256, i%256), "unknown token", at.Add(time.Duration(i)*time.Second), false)
	}
	if len(l.sources) > maxRefusalSources+1 || len(l.unknown) > maxRefusals {
		t.Fatalf("%d sources, %d entries", len(l.sources), len(l.unknown))
	}
	if sourceNetwork("2001:db8:1:2ff::1") != "2001:db8:1:200::/56" {
		t.Fatalf("IPv6 network %s", sourceNetwork("2001:db8:1:2ff::1"))
	}
}

// TestForwardedPrincipal: the principal a forwarding voter names is believed only with both
// headers and a name without spaces or control characters.
func TestForwardedPrincipal(t *testing.T) {
	for _, tc := range []struct {
		fwd, name string
		ok        bool
	}{
		{"v1", "web-team", true},
		{"v1", "cert:op", true},
		{"", "web-team", false},
		{"v1", "", false},
		{"v1", "anonymous", false},
		{"v1", "web team", false},
		{"v1", "web\nteam", false},
		{"v1", strings.Repeat("x", 201), false},
	} {
		r, _ := http.NewRequest("PUT", "/v1/checks/x", nil)
		if tc.fwd != "" {
			r.Header.Set(headerForwarded, tc.fwd)
		}
		if tc.name != "" {
			r.Header.Set(headerPrincipal, tc.name)
		}
		p, ok := forwardedPrincipal(r, "v1")
		if ok != tc.ok || (ok && (p.Name != tc.name || p.Via != "v1")) {
			t.Errorf("%q %q: %+v %v", tc.fwd, tc.name, p, ok)
		}
	}
}
