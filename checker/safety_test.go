package checker

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestAddressPolicy(t *testing.T) {
	tests := []struct {
		addr   string
		policy AddressPolicy
		want   string // "" allowed, else the range named in the refusal
	}{
		{"8.8.8.8", AddressPolicy{}, ""},
		{"2606:4700::1111", AddressPolicy{}, ""},
		{"127.0.0.1", AddressPolicy{}, "loopback"},
		{"127.9.9.9", AddressPolicy{}, "loopback"},
		{"::1", AddressPolicy{}, "loopback"},
		{"127.0.0.1", AddressPolicy{AllowLoopback: true}, ""},
		{"::1", AddressPolicy{AllowLoopback: true}, ""},
		{"::ffff:127.0.0.1", AddressPolicy{}, "loopback"},
		{"::ffff:127.0.0.1", AddressPolicy{AllowLoopback: true}, ""},
		{"10.1.2.3", AddressPolicy{}, "private"},
		{"10.1.2.3", AddressPolicy{AllowLoopback: true}, "private"},
		{"172.16.0.1", AddressPolicy{}, "private"},
		{"172.32.0.1", AddressPolicy{}, ""},
		{"192.168.1.1", AddressPolicy{}, "private"},
		{"::ffff:192.168.1.1", AddressPolicy{}, "private"},
		{"100.64.0.1", AddressPolicy{}, "cgnat"},
		{"100.128.0.1", AddressPolicy{}, ""},
		{"169.254.169.254", AddressPolicy{}, "link-local"},
		{"fe80::1", AddressPolicy{}, "link-local"},
		{"fe80::1%eth0", AddressPolicy{}, "link-local"},
		{"fd00::1", AddressPolicy{}, "unique-local"},
		{"224.0.0.1", AddressPolicy{}, "multicast"},
		{"ff02::1", AddressPolicy{}, "multicast"},
		{"0.0.0.0", AddressPolicy{}, "this-network"},
		{"::", AddressPolicy{}, "unspecified"},
		{"255.255.255.255", AddressPolicy{}, "reserved"},
		{"192.0.2.7", AddressPolicy{}, "documentation"},
		{"2001:db8::1", AddressPolicy{}, "documentation"},
		{"198.18.0.1", AddressPolicy{}, "benchmarking"},
		{"64:ff9b::a01:203", AddressPolicy{}, "private (embedded IPv4)"},
		{"64:ff9b::808:808", AddressPolicy{}, ""},
		{"2002:c0a8:101::1", AddressPolicy{}, "private (embedded IPv4)"},
		{"2002:808:808::1", AddressPolicy{}, ""},
		{"::a9fe:a9fe", AddressPolicy{}, "link-local (embedded IPv4)"},
		{"::ffff:0:a9fe:a9fe", AddressPolicy{}, "link-local (embedded IPv4)"},
		{"::ffff:0:a00:1", AddressPolicy{}, "private (embedded IPv4)"},
		{"::808:808", AddressPolicy{}, "reserved (outside global unicast 2000::/3)"},
		{"::2", AddressPolicy{}, "this-network (embedded IPv4)"},
		{"4000::1", AddressPolicy{}, "reserved (outside global unicast 2000::/3)"},
		{"e000::1", AddressPolicy{}, "reserved (outside global unicast 2000::/3)"},
		{"64:ff9b::1:808:808", AddressPolicy{}, "reserved (outside global unicast 2000::/3)"},
		{"2620:4f:8000::1", AddressPolicy{}, "as112"},
		{"2606:4700::1111", AddressPolicy{}, ""},
		{"::a00:1", AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, ""},
		{"10.1.2.3", AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}, ""},
		{"::ffff:10.1.2.3", AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}, ""},
		{"10.2.0.1", AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}, "private"},
	}
	for _, tt := range tests {
		err := tt.policy.Check(netip.MustParseAddr(tt.addr))
		var ae *AddressError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s with %+v: refused (%v), want allowed", tt.addr, tt.policy, err)
		case tt.want != "" && !errors.As(err, &ae):
			t.Errorf("%s with %+v: %v, want refused as %s", tt.addr, tt.policy, err, tt.want)
		case tt.want != "" && ae.Range != tt.want:
			t.Errorf("%s: refused as %q, want %q", tt.addr, ae.Range, tt.want)
		}
	}
	if err := (AddressPolicy{}).Check(netip.Addr{}); err == nil {
		t.Error("the zero address was allowed")
	}
}

// TestDialControlRefuses checks the last line of defence: the default dialer's Control sees
// the address the kernel connects to and refuses it, even when the caller skipped the check.
func TestDialControlRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := defaultDialer(newGuard(AddressPolicy{}))
	conn, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err == nil {
		conn.Close()
		t.Fatal("dialled loopback through a dialer that refuses it")
	}
	if !isAddressError(err) {
		t.Fatalf("error %v is not an AddressError", err)
	}
	d = defaultDialer(newGuard(AddressPolicy{AllowLoopback: true}))
	conn, err = d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("loopback allowed but dial failed: %v", err)
	}
	conn.Close()
}
