package location

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/internal/netkey"
)

// TestRRL checks the allowance per network, the slip, the reset each second and the
// separation of networks.
func TestRRL(t *testing.T) {
	r := newRRL(RRLConfig{ResponsesPerSecond: 3, Slip: 2, TableSize: 1024})
	t0 := time.Unix(1_000_000, 0)
	a := netip.MustParseAddr("198.51.100.7")
	sameNet := netip.MustParseAddr("198.51.100.200")
	other := netip.MustParseAddr("198.51.101.7")
	var got []rrlDecision
	for i := range 7 {
		addr := a
		if i%2 == 1 {
			addr = sameNet
		}
		got = append(got, r.allow(addr, t0))
	}
	want := []rrlDecision{rrlAllow, rrlAllow, rrlAllow, rrlDrop, rrlSlip, rrlDrop, rrlSlip}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("decisions %v, want %v", got, want)
		}
	}
	if d := r.allow(other, t0); d != rrlAllow {
		t.Errorf("another /24 limited: %v", d)
	}
	if d := r.allow(a, t0.Add(time.Second)); d != rrlAllow {
		t.Errorf("next second still limited: %v", d)
	}

	v6 := netip.MustParseAddr("2001:db8:1:2ff::1")
	v6same := netip.MustParseAddr("2001:db8:1:200::9")
	v6other := netip.MustParseAddr("2001:db8:1:300::1")
	if netkey.Of(v6) != netkey.Of(v6same) || netkey.Of(v6) == netkey.Of(v6other) {
		t.Error("IPv6 networks are not /56")
	}
	if netkey.Of(a) != netkey.Of(netip.MustParseAddr("::ffff:198.51.100.1")) {
		t.Error("IPv4-mapped addresses are not their IPv4 network")
	}
	if netkey.Of(netip.MustParseAddr("0.0.0.0")) == netkey.Of(netip.MustParseAddr("::")) {
		t.Error("the families share a key")
	}

	if netkey.Of(netip.Addr{}) == 0 || netkey.Of(netip.Addr{}) == netkey.Of(netip.MustParseAddr("0.0.0.0")) {
		t.Error("an unknown address has no key of its own")
	}
	if newRRL(RRLConfig{}) != nil {
		t.Error("rate limiting on by default")
	}
	noSlip := newRRL(RRLConfig{ResponsesPerSecond: 1, Slip: -1})
	noSlip.allow(a, t0)
	for range 4 {
		if d := noSlip.allow(a, t0); d != rrlDrop {
			t.Errorf("slip -1: %v, want drop", d)
		}
	}
}

// TestRRLTableIsFixed checks that a million client networks leave the table's size alone.
func TestRRLTableIsFixed(t *testing.T) {
	r := newRRL(RRLConfig{ResponsesPerSecond: 1, TableSize: 4096})
	before := 0
	for i := range r.shards {
		before += len(r.shards[i].entries)
	}
	t0 := time.Unix(1_000_000, 0)
	for i := range 1 << 20 {
		r.allow(netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 1}), t0)
	}
	after := 0
	for i := range r.shards {
		after += len(r.shards[i].entries)
	}
	if before != 4096 || after != before {
		t.Errorf("table of %d entries, then %d; want 4096", before, after)
	}
}

// TestRRLOnTheWire checks that a limited client gets truncated responses (slip) or none over
// UDP, and full answers over TCP.
func TestRRLOnTheWire(t *testing.T) {
	now := time.Unix(2_000_000, 0)
	s := startServer(t, Config{RRL: RRLConfig{ResponsesPerSecond: 2, Slip: 2},
		Now: func() time.Time { return now }})
	full, truncated, none := 0, 0, 0
	c := &dns.Client{Net: "udp", Timeout: 300 * time.Millisecond}
	for range 6 {
		r, _, err := c.Exchange(query("www.example.test.", dns.TypeA, 0), s.Addr().String())
		switch {
		case err != nil:
			none++
		case r.Truncated && len(r.Answer) == 0:
			truncated++
		case len(r.Answer) == 1:
			full++
		}
	}
	if full != 2 || truncated != 2 || none != 2 {
		t.Errorf("UDP: %d full, %d truncated, %d dropped; want 2 each", full, truncated, none)
	}
	if r := exchange(t, "tcp", s.Addr(), query("www.example.test.", dns.TypeA, 0)); len(r.Answer) != 1 {
		t.Errorf("TCP limited: %v", r)
	}
}

// TestBudget checks the token bucket: its burst, its refill, and that nil is unlimited.
func TestBudget(t *testing.T) {
	b := newBudget(100) // burst 10
	t0 := time.Unix(0, 0)
	n := 0
	for range 50 {
		if b.take(t0) {
			n++
		}
	}
	if n != 10 {
		t.Errorf("burst of %d, want 10", n)
	}
	if !b.take(t0.Add(10 * time.Millisecond)) {
		t.Error("no token 10ms later at 100/s")
	}
	if b.take(t0.Add(10 * time.Millisecond)) {
		t.Error("two tokens 10ms later at 100/s")
	}
	n = 0
	for i := range 1000 {
		if b.take(t0.Add(time.Second + time.Duration(i)*time.Millisecond)) {
			n++
		}
	}
	if n < 95 || n > 115 {
		t.Errorf("%d queries in one second at 100/s", n)
	}
	var unlimited *budget
	if newBudget(0) != nil || !unlimited.take(t0) {
		t.Error("a zero budget is not unlimited")
	}
}
