package netkey

import (
	"net"
	"net/netip"
	"testing"
)

func TestOfGroupsByNetwork(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		// IPv4: the /24 is the network.
		{"192.0.2.1", "192.0.2.254", true},
		{"192.0.2.1", "192.0.3.1", false},
		{"127.0.0.1", "127.0.1.1", false},
		{"127.0.1.1", "127.0.1.200", true},
		{"10.0.0.1", "11.0.0.1", false},
		// IPv4-mapped IPv6 is IPv4.
		{"::ffff:192.0.2.1", "192.0.2.77", true},
		{"::ffff:192.0.2.1", "::ffff:192.0.3.1", false},
		// IPv6: the /56 is the network.
		{"2001:db8:0:100::1", "2001:db8:0:1ff:ffff::1", true},
		{"2001:db8:0:100::1", "2001:db8:0:200::1", false},
		{"2001:db8::1", "2001:db9::1", false},
		// Zones are ignored: link-local addresses of every interface are one fe80::/56.
		{"fe80::1%eth0", "fe80::2%eth1", true},
		{"fe80::1%eth0", "fe80::1", true},
		// The families never share a key, not even all zeros.
		{"0.0.0.0", "::", false},
		{"192.0.2.1", "c000:200::", false},
		{"::1", "127.0.0.1", false},
	} {
		ka, kb := Of(netip.MustParseAddr(c.a)), Of(netip.MustParseAddr(c.b))
		if (ka == kb) != c.same {
			t.Errorf("%s (%v) and %s (%v): same network %v, want %v", c.a, ka, c.b, kb, ka == kb, c.same)
		}
	}
}

func TestKeyPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.77":             "192.0.2.0/24",
		"::ffff:198.51.100.9":    "198.51.100.0/24",
		"2001:db8:aa:bbcc:1::1":  "2001:db8:aa:bb00::/56",
		"fe80::1%eth0":           "fe80::/56",
		"ffff:ffff:ffff:ffff::1": "ffff:ffff:ffff:ff00::/56",
	} {
		k := Of(netip.MustParseAddr(in))
		if got := k.String(); got != want {
			t.Errorf("%s: network %s, want %s", in, got, want)
		}
		if p := k.Prefix(); !p.Contains(netip.MustParseAddr(in).WithZone("").Unmap()) {
			t.Errorf("%s: prefix %s does not contain it", in, p)
		}
	}
}

func TestUnknownAddresses(t *testing.T) {
	u := Of(netip.Addr{})
	if u == 0 {
		t.Fatal("the invalid address's key is 0, the empty slot")
	}
	if u.String() != "unknown" || u.Prefix().IsValid() {
		t.Fatalf("invalid address: %s, prefix %v", u, u.Prefix())
	}
	for _, s := range []string{"", "pipe", "example.com:53", "[::1", "300.1.1.1:5"} {
		if k := OfString(s); k != u {
			t.Errorf("%q: %v, want the unknown network", s, k)
		}
	}
	if OfAddr(nil) != u || OfAddr((*net.TCPAddr)(nil)) != u || OfAddr((*net.UDPAddr)(nil)) != u {
		t.Error("a nil address is not the unknown network")
	}
	if Of(netip.MustParseAddr("0.0.0.0")) == u || Of(netip.MustParseAddr("::")) == u {
		t.Error("an all-zeros address is the unknown network")
	}
}

func TestOfAddrForms(t *testing.T) {
	want := Of(netip.MustParseAddr("192.0.2.1"))
	v6 := Of(netip.MustParseAddr("2001:db8:0:100::1"))
	for _, c := range []struct {
		a    net.Addr
		want Key
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.9"), Port: 1}, want},            // 16-byte form
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.9").To4(), Port: 1}, want},      // 4-byte form
		{&net.UDPAddr{IP: net.ParseIP("::ffff:192.0.2.200"), Port: 53}, want},  // mapped
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:0:1aa::5"), Zone: "eth0"}, v6}, // zone
		{&net.IPAddr{IP: net.ParseIP("192.0.2.3")}, want},                      // bare IP
		{&net.IPAddr{IP: net.ParseIP("2001:db8:0:100::9"), Zone: "eth1"}, v6},  // bare IP, zone
		{fakeAddr("[2001:db8:0:1ff::1%eth2]:7946"), v6},                        // host:port, zone
		{fakeAddr("192.0.2.50:7946"), want},                                    // host:port
		{fakeAddr("[::ffff:192.0.2.1]:1"), want},                               // mapped host:port
	} {
		if got := OfAddr(c.a); got != c.want {
			t.Errorf("%T %v: %v, want %v", c.a, c.a, got, c.want)
		}
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "fake" }
func (a fakeAddr) String() string  { return string(a) }
