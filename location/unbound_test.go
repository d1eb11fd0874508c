package location

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location/unboundtest"
)

// unboundZone is the signed demo zone unbound validates: TTLs of one second so that a
// failover reaches it at once.
func unboundZone() config.Zone {
	z := config.DefaultZone()
	z.Name = "example.test."
	z.TTL = 1
	z.SOA.TTL, z.SOA.Minimum = 1, 1
	z.NameServers = []string{"ns1.example.test."}
	long := strings.Repeat("y", 250)
	var big []config.Record
	for i := range 8 {
		big = append(big, config.Record{Value: long + string(rune('a'+i))})
	}
	z.RecordSets = []config.RecordSet{
		{Name: "ns1", Type: config.TypeA, Records: []config.Record{{Value: "127.0.0.1"}}},
		{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.1"}}},
		{Name: "fo", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
			{Value: "192.0.2.10", HealthCheck: "p", Role: config.RolePrimary},
			{Value: "192.0.2.11", HealthCheck: "s", Role: config.RoleSecondary}}},
		{Name: "*.wild", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.99"}}},
		{Name: "alias", Type: config.TypeCNAME, Records: []config.Record{{Value: "fo.example.test."}}},
		{Name: "big", Type: config.TypeTXT, Records: big},
	}
	return z
}

// Debian's unbound, a validating resolver, trusts example.test by its DS alone and validates
// what one location answers: records, a failover as it happens, a CNAME, a wildcard, a name
// that does not exist, a type a name lacks, the DNSKEY set, and an answer too large for UDP
// (fetched over TCP); then a ZSK rollover with unbound asking all through it, and not one
// answer bogus.
func TestUnboundValidatesSignedZone(t *testing.T) {
	s := startServer(t, Config{})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{unboundZone()}, nil))
	sealer, err := dnssec.NewSealer([]byte("unbound-test-seal-secret-0000000"))
	if err != nil {
		t.Fatal(err)
	}
	zk, err := dnssec.InitialKeys("example.test.", dnssec.SchemeSplit, sealer, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	install := func(zk *dnssec.ZoneKeys) {
		sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{DNSKEYTTL: 1})
		if err != nil {
			t.Fatal(err)
		}
		s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
	}
	install(zk)
	ds := zk.Keys[0].DS("example.test.", 3600)
	u := unboundtest.Start(t, "example.test.", s.Addr().String(), ds.String())

	r := u.Ask(t, "www.example.test.", dns.TypeA)
	unboundtest.Secure(t, "www A", r)
	if v := unboundtest.Addrs(r); len(v) != 1 || v[0] != "192.0.2.1" {
		t.Fatalf("www A: %v", v)
	}
	unboundtest.Secure(t, "DNSKEY", u.Ask(t, "example.test.", dns.TypeDNSKEY))
	unboundtest.Secure(t, "wildcard", u.Ask(t, "a.wild.example.test.", dns.TypeA))
	r = u.Ask(t, "alias.example.test.", dns.TypeA)
	unboundtest.Secure(t, "CNAME to the failover set", r)
	r = u.Ask(t, "nothing.example.test.", dns.TypeA)
	unboundtest.Secure(t, "missing name (black lie)", r)
	if len(r.Answer) != 0 {
		t.Fatalf("missing name answered: %v", r)
	}
	r = u.Ask(t, "www.example.test.", dns.TypeAAAA)
	unboundtest.Secure(t, "missing type", r)
	if len(r.Answer) != 0 {
		t.Fatalf("missing type answered: %v", r)
	}
	r = u.Ask(t, "big.example.test.", dns.TypeTXT)
	unboundtest.Secure(t, "large answer", r)
	if len(r.Answer) < 8 {
		t.Fatalf("large answer: %d records", len(r.Answer))
	}

	failover := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := u.Ask(t, "fo.example.test.", dns.TypeA)
			unboundtest.Secure(t, "fo A", r)
			if v := unboundtest.Addrs(r); len(v) == 1 && v[0] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("fo A: %v, want %s within 10s", unboundtest.Addrs(r), want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	failover("192.0.2.10")
	s.SetVerdicts(map[string]bool{"p": false})
	failover("192.0.2.11")
	s.SetVerdicts(map[string]bool{"p": true})
	failover("192.0.2.10")

	// A ZSK rollover, asked through from start to end: the new ZSK is published first,
	// signs after the DNSKEY TTL and the margin, and the old one leaves after the largest TTL.
	now := time.Now().Unix()
	next, err := dnssec.Rollover(zk, dnssec.RoleZSK, sealer, now, dnssec.Timing{DNSKEYTTL: 1, MaxTTL: 1, Margin: 1})
	if err != nil {
		t.Fatal(err)
	}
	install(next)
	oldTag, newTag := zk.Keys[1].Tag, next.Keys[2].Tag
	seen := map[uint16]bool{}
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		r := u.Ask(t, "www.example.test.", dns.TypeA)
		unboundtest.Secure(t, "www A during the rollover", r)
		unboundtest.Secure(t, "DNSKEY during the rollover", u.Ask(t, "example.test.", dns.TypeDNSKEY))
		for _, rr := range exchange(t, "udp", s.Addr(), doQuery("www.example.test.", dns.TypeA, 1232)).Answer {
			if sig, ok := rr.(*dns.RRSIG); ok {
				seen[sig.KeyTag] = true
			}
		}
	}
	if !seen[oldTag] || !seen[newTag] {
		t.Fatalf("the rollover did not go from key %d to key %d: signers seen %v", oldTag, newTag, seen)
	}
}

// A CSK rollover by double signature, as two validating resolvers see it: one trusting the
// old key's DS (the parent before the change), one the new key's (after). While both keys
// sign, both validate; once the rollover is finished only the new key signs, and only the
// resolver with the new DS validates: the DS at the parent must change before -finish.
func TestUnboundCSKRollover(t *testing.T) {
	s := startServer(t, Config{})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{unboundZone()}, nil))
	sealer, err := dnssec.NewSealer([]byte("unbound-test-seal-secret-0000000"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	zk, err := dnssec.InitialKeys("example.test.", dnssec.SchemeCombined, sealer, now)
	if err != nil {
		t.Fatal(err)
	}
	tm := dnssec.Timing{DNSKEYTTL: 1, MaxTTL: 1, Margin: 1}
	both, err := dnssec.Rollover(zk, dnssec.RoleCSK, sealer, now, tm)
	if err != nil {
		t.Fatal(err)
	}
	install := func(zk *dnssec.ZoneKeys) {
		sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{DNSKEYTTL: 1})
		if err != nil {
			t.Fatal(err)
		}
		s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
	}
	install(both)
	oldDS, newDS := both.Keys[0].DS("example.test.", 3600), both.Keys[1].DS("example.test.", 3600)
	before := unboundtest.Start(t, "example.test.", s.Addr().String(), oldDS.String())
	after := unboundtest.Start(t, "example.test.", s.Addr().String(), newDS.String())
	for _, u := range []*unboundtest.Resolver{before, after} {
		unboundtest.Secure(t, "www A, both keys signing", u.Ask(t, "www.example.test.", dns.TypeA))
		unboundtest.Secure(t, "a missing name, both keys signing", u.Ask(t, "nothing.example.test.", dns.TypeA))
	}
	done, err := dnssec.FinishRollover(both, dnssec.RoleCSK, time.Now().Unix(), tm, true) // forced: the resolvers were started with the DS each trusts
	if err != nil {
		t.Fatal(err)
	}
	install(done)
	time.Sleep(2 * time.Second) // the resolvers' caches (one second at most) expire
	unboundtest.Secure(t, "www A, the new key alone", after.Ask(t, "www.example.test.", dns.TypeA))
	if r := before.Ask(t, "www.example.test.", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("the resolver with the old DS still validates after the old key stopped signing:\n%v", r)
	}
}
