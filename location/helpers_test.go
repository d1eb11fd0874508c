package location

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
)

// weight returns a pointer to w, for record weights.
func weight(w int) *int { return &w }

// testZones returns the zones the tests serve: example.test with one record set of each
// kind a rule of the issue needs, and ns.vigil.test, whose name servers live in the zone.
func testZones() []config.Zone {
	long := strings.Repeat("x", 200)
	var big []config.Record
	for i := range 10 {
		big = append(big, config.Record{Value: long + string(rune('a'+i))})
	}
	example := config.DefaultZone()
	example.Name = "example.test."
	example.TTL = 60
	example.SOA.Minimum = 120
	example.RecordSets = []config.RecordSet{
		{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.1"}}},
		{Name: "www", Type: config.TypeTXT, TTL: config.TTL(30), Records: []config.Record{{Value: `v=1 "quoted"`}}},
		{Name: "v6", Type: config.TypeAAAA, Records: []config.Record{{Value: "2001:db8::1"}}},
		{Name: "@", Type: config.TypeMX, Records: []config.Record{{Value: "10 mail.example.test."}}},
		{Name: "@", Type: config.TypeTXT, Records: []config.Record{{Value: "hello"}}},
		{Name: "fo", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
			{Value: "192.0.2.10", HealthCheck: "p", Role: config.RolePrimary},
			{Value: "192.0.2.11", HealthCheck: "s", Role: config.RoleSecondary}}},
		{Name: "wt", Type: config.TypeA, Policy: config.PolicyWeighted, Records: []config.Record{
			{Value: "192.0.2.20", HealthCheck: "w1", Weight: weight(50)},
			{Value: "192.0.2.21", HealthCheck: "w2", Weight: weight(50)}}},
		{Name: "mv", Type: config.TypeA, Policy: config.PolicyMultivalue, Records: []config.Record{
			{Value: "192.0.2.30", HealthCheck: "m1"},
			{Value: "192.0.2.31", HealthCheck: "m2"},
			{Value: "192.0.2.32", HealthCheck: "m3"}}},
		{Name: "plain", Type: config.TypeA, Records: []config.Record{
			{Value: "192.0.2.40", HealthCheck: "p"}, {Value: "192.0.2.41", HealthCheck: "s"}}},
		{Name: "alias", Type: config.TypeCNAME, Records: []config.Record{{Value: "www.example.test."}}},
		{Name: "chain1", Type: config.TypeCNAME, Records: []config.Record{{Value: "chain2.example.test."}}},
		{Name: "chain2", Type: config.TypeCNAME, Records: []config.Record{{Value: "www.example.test."}}},
		{Name: "loop1", Type: config.TypeCNAME, Records: []config.Record{{Value: "loop2.example.test."}}},
		{Name: "loop2", Type: config.TypeCNAME, Records: []config.Record{{Value: "loop1.example.test."}}},
		{Name: "dangling", Type: config.TypeCNAME, Records: []config.Record{{Value: "nowhere.example.test."}}},
		{Name: "out", Type: config.TypeCNAME, Records: []config.Record{{Value: "www.elsewhere.net."}}},
		{Name: "big", Type: config.TypeTXT, Records: big},
		{Name: "a.b.deep", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.50"}}},
		{Name: "sub", Type: config.TypeNS, Records: []config.Record{{Value: "ns1.sub.example.test."}, {Value: "ns.elsewhere.net."}}},
		{Name: "ns1.sub", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.53"}}},
	}
	nsz := config.DefaultZone()
	nsz.Name = "NS.Vigil.Test"
	nsz.SOA.TTL = 60 // below MINIMUM (300): the negative TTL is 60
	return []config.Zone{example, nsz}
}

// testShards returns the name-server shards of testZones: example.test on virtual name
// servers 1 to 4, ns.vigil.test on 1, 2, 5 and 6, each with a loopback address.
func testShards() map[string][]NameServer {
	shard := func(idx ...int) []NameServer {
		var out []NameServer
		for _, i := range idx {
			out = append(out, NameServer{Index: i, Name: "ns-" + string(rune('0'+i)) + ".ns.vigil.test.",
				Addr: netip.AddrFrom4([4]byte{127, 0, 0, byte(10 + i)})})
		}
		return out
	}
	return map[string][]NameServer{
		"example.test.":  shard(1, 2, 3, 4),
		"ns.vigil.test.": shard(1, 2, 5, 6),
	}
}

// mustSnapshot compiles zones or fails the test.
func mustSnapshot(t testing.TB, zones []config.Zone, shards map[string][]NameServer) *Snapshot {
	t.Helper()
	snap, err := NewSnapshot(zones, shards)
	if err != nil {
		t.Fatalf("NewSnapshot: %v", err)
	}
	return snap
}

// startServer starts a server on 127.0.0.1 with the test zones and returns it; it stops when
// the test ends.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s.SetSnapshot(mustSnapshot(t, testZones(), testShards()))
	if err := s.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not stop within 10s")
		}
	})
	return s
}

// query builds a query for name and qtype; edns > 0 adds an OPT record of that size.
func query(name string, qtype uint16, edns uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	if edns > 0 {
		m.SetEdns0(edns, false)
	}
	return m
}

// exchange sends m to addr over net ("udp" or "tcp") and returns the response.
func exchange(t testing.TB, network string, addr netip.AddrPort, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 2 * time.Second, UDPSize: 65535}
	var err error
	for range 3 {
		var r *dns.Msg
		if r, _, err = c.Exchange(m, addr.String()); err == nil {
			return r
		}
	}
	t.Fatalf("exchange %s %s: %v", network, m.Question[0].String(), err)
	return nil
}

// values returns the data of the answer section's A, AAAA, TXT and CNAME records, in order.
func values(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		case *dns.CNAME:
			out = append(out, rr.Target)
		case *dns.TXT:
			out = append(out, strings.Join(rr.Txt, ""))
		default:
			out = append(out, rr.String())
		}
	}
	return out
}
