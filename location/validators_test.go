package location

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location/delvtest"
	"github.com/vigil-dns/vigil/location/unboundtest"
)

// signedZones starts a server with zones, each of apexes signed by fresh keys (combined
// scheme), and returns it with the DS record of each signed zone, by apex.
func signedZones(t *testing.T, zones []config.Zone, apexes ...string) (*Server, map[string]*dns.DS) {
	t.Helper()
	s := startServer(t, Config{})
	s.SetSnapshot(mustSnapshot(t, zones, nil))
	sealer, err := dnssec.NewSealer([]byte("validators-test-seal-secret-0000"))
	if err != nil {
		t.Fatal(err)
	}
	signers := map[string]*dnssec.Signer{}
	ds := map[string]*dns.DS{}
	for _, apex := range apexes {
		zk, err := dnssec.InitialKeys(apex, dnssec.SchemeCombined, sealer, time.Now().Unix())
		if err != nil {
			t.Fatal(err)
		}
		sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{DNSKEYTTL: 1})
		if err != nil {
			t.Fatal(err)
		}
		signers[apex] = sg
		ds[apex] = zk.Keys[0].DS(apex, 3600)
	}
	s.SetSigners(signers)
	return s, ds
}

// smallZone is a zone of apex with TTLs of one second, one name server and sets.
func smallZone(apex string, sets ...config.RecordSet) config.Zone {
	z := config.DefaultZone()
	z.Name = apex
	z.TTL = 1
	z.SOA.TTL, z.SOA.Minimum = 1, 1
	z.NameServers = []string{"ns1.example.test."}
	z.RecordSets = sets
	return z
}

// validatorsOf returns unbound and delv, both trusting ds for zone and asking s.
func validatorsOf(t *testing.T, s *Server, zone string, ds *dns.DS) (*unboundtest.Resolver, *delvtest.Validator) {
	t.Helper()
	return unboundtest.Start(t, zone, s.Addr().String(), ds.String()), delvtest.New(t, zone, s.Addr().String(), ds.String())
}

// A record set with nothing healthy and no_healthy: nodata (multivalue and failover), and an
// alias to one, answer no data (an alias to a missing name or to a CNAME is refused as never
// served, see served_test.go): unbound and delv must both prove it, over the NSEC that lists the name's other
// types but not the one asked.
func TestValidatorsNoDataProof(t *testing.T) {
	zone := smallZone("example.test.",
		config.RecordSet{Name: "ns1", Type: config.TypeA, Records: []config.Record{{Value: "127.0.0.1"}}},
		config.RecordSet{Name: "mv", Type: config.TypeA, Policy: config.PolicyMultivalue, NoHealthy: config.NoHealthyNoData,
			Records: []config.Record{{Value: "192.0.2.1", HealthCheck: "down"}, {Value: "192.0.2.2", HealthCheck: "down"}}},
		config.RecordSet{Name: "mv", Type: config.TypeTXT, Records: []config.Record{{Value: "here"}}},
		config.RecordSet{Name: "fo", Type: config.TypeA, Policy: config.PolicyFailover, NoHealthy: config.NoHealthyNoData,
			Records: []config.Record{{Value: "192.0.2.3", HealthCheck: "down", Role: config.RolePrimary},
				{Value: "192.0.2.4", HealthCheck: "down", Role: config.RoleSecondary}}},
		config.RecordSet{Name: "to-mv", Type: config.TypeA, Alias: "mv"},
	)
	s, ds := signedZones(t, []config.Zone{zone}, "example.test.")
	s.SetVerdicts(map[string]bool{"down": false})
	u, d := validatorsOf(t, s, "example.test.", ds["example.test."])
	for _, name := range []string{"mv", "fo", "to-mv"} {
		qname := name + ".example.test."
		// Our own view first: NOERROR, no answer, an NSEC without the type asked.
		r := exchange(t, "udp", s.Addr(), doQuery(qname, dns.TypeA, 1232))
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
			t.Fatalf("%s A: want no data, got\n%v", qname, r)
		}
		var nsec *dns.NSEC
		for _, rr := range r.Ns {
			if n, ok := rr.(*dns.NSEC); ok {
				nsec = n
			}
		}
		if nsec == nil {
			t.Fatalf("%s A: no NSEC in the denial:\n%v", qname, r)
		}
		for _, typ := range nsec.TypeBitMap {
			if typ == dns.TypeA {
				t.Fatalf("%s A: the NSEC of the denial lists A:\n%v", qname, r)
			}
		}
		ur := u.Ask(t, qname, dns.TypeA)
		unboundtest.Secure(t, qname+" A no data (unbound)", ur)
		if len(ur.Answer) != 0 {
			t.Fatalf("%s A: unbound got an answer: %v", qname, ur)
		}
		d.Secure(t, qname+" A no data", qname, dns.TypeA, false)
	}
	// The other type at the name still validates, and the set answers again once healthy.
	unboundtest.Secure(t, "mv TXT", u.Ask(t, "mv.example.test.", dns.TypeTXT))
	s.SetVerdicts(map[string]bool{"down": true})
	// unbound keeps the cached denial (a TTL of one second) for up to two seconds: ask again
	// until it is gone, for at most 10 s.
	var r *dns.Msg
	for deadline := time.Now().Add(10 * time.Second); ; {
		time.Sleep(500 * time.Millisecond)
		r = u.Ask(t, "to-mv.example.test.", dns.TypeA)
		if len(r.Answer) > 0 || time.Now().After(deadline) {
			break
		}
	}
	unboundtest.Secure(t, "to-mv A healthy again", r)
	if len(r.Answer) == 0 {
		t.Fatalf("to-mv A healthy again: no answer after 10 s:\n%v", r)
	}
}

// A signed child zone hosted beside its signed parent, which delegates to it with the
// child's DS: the DS is the parent's data, signed by the parent's key, so that a resolver
// trusting the parent alone validates every name of the child; and an unsigned child
// beside it is provably insecure (the parent's signed NSEC says it has no DS).
func TestValidatorsSignedChildBesideParent(t *testing.T) {
	s := startServer(t, Config{})
	sealer, err := dnssec.NewSealer([]byte("validators-test-seal-secret-0000"))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]*dnssec.ZoneKeys{}
	signers := map[string]*dnssec.Signer{}
	for _, apex := range []string{"example.test.", "child.example.test."} {
		zk, err := dnssec.InitialKeys(apex, dnssec.SchemeCombined, sealer, time.Now().Unix())
		if err != nil {
			t.Fatal(err)
		}
		sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{DNSKEYTTL: 1})
		if err != nil {
			t.Fatal(err)
		}
		keys[apex], signers[apex] = zk, sg
	}
	childDS := keys["child.example.test."].Keys[0].DS("child.example.test.", 1)
	ds := strings.Join(strings.Fields(childDS.String())[4:], " ")
	parent := smallZone("example.test.",
		config.RecordSet{Name: "ns1", Type: config.TypeA, Records: []config.Record{{Value: "127.0.0.1"}}},
		config.RecordSet{Name: "child", Type: config.TypeNS, Records: []config.Record{{Value: "ns1.example.test."}}},
		config.RecordSet{Name: "child", Type: config.TypeDS, Records: []config.Record{{Value: ds}}},
		config.RecordSet{Name: "plain", Type: config.TypeNS, Records: []config.Record{{Value: "ns1.example.test."}}},
	)
	child := smallZone("child.example.test.",
		config.RecordSet{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.7"}}})
	plain := smallZone("plain.example.test.",
		config.RecordSet{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.8"}}})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{parent, child, plain}, nil))
	s.SetSigners(signers)

	// Our own view: the DS is signed by the parent.
	r := exchange(t, "udp", s.Addr(), doQuery("child.example.test.", dns.TypeDS, 1232))
	for _, rr := range r.Answer {
		if sig, ok := rr.(*dns.RRSIG); ok && sig.SignerName != "example.test." {
			t.Fatalf("child DS signed by %s, want example.test.:\n%v", sig.SignerName, r)
		}
	}
	u, d := validatorsOf(t, s, "example.test.", keys["example.test."].Keys[0].DS("example.test.", 3600))
	unboundtest.Secure(t, "child DS", u.Ask(t, "child.example.test.", dns.TypeDS))
	r = u.Ask(t, "www.child.example.test.", dns.TypeA)
	unboundtest.Secure(t, "www.child A", r)
	if v := unboundtest.Addrs(r); len(v) != 1 || v[0] != "192.0.2.7" {
		t.Fatalf("www.child A: %v", v)
	}
	unboundtest.Secure(t, "child DNSKEY", u.Ask(t, "child.example.test.", dns.TypeDNSKEY))
	unboundtest.Secure(t, "a missing name in the child", u.Ask(t, "nothing.child.example.test.", dns.TypeA))
	d.Secure(t, "www.child A", "www.child.example.test.", dns.TypeA, false)
	d.Secure(t, "child DS", "child.example.test.", dns.TypeDS, false)

	// The unsigned child: insecure, not bogus. unbound answers without AD, delv says so.
	r = u.Ask(t, "www.plain.example.test.", dns.TypeA)
	if r.Rcode != dns.RcodeSuccess || r.AuthenticatedData || len(unboundtest.Addrs(r)) != 1 {
		t.Fatalf("www.plain A: want an insecure answer, got\n%v", r)
	}
	if out := d.Ask(t, "www.plain.example.test.", dns.TypeA, false).Output; !strings.Contains(out, "unsigned answer") {
		t.Fatalf("www.plain A: delv did not prove it insecure:\n%s", out)
	}
}

// CAA values longer than miekg/dns packs in a dns.CAA (1,100 ASCII bytes; 300 bytes of
// UTF-8, escaped to 1,200) are served, as NSD serves them: over TCP and validated by unbound
// and delv, with the bytes written, and the name's other sets still answer.
func TestValidatorsLongCAA(t *testing.T) {
	ascii := strings.Repeat("a", 1100)
	utf := strings.Repeat("é", 150)
	zone := smallZone("example.test.",
		config.RecordSet{Name: "ns1", Type: config.TypeA, Records: []config.Record{{Value: "127.0.0.1"}}},
		config.RecordSet{Name: "caa", Type: config.TypeCAA, Records: []config.Record{
			{Value: `0 issue "` + ascii + `"`}, {Value: `0 issuewild "` + utf + `"`}, {Value: `0 iodef "mailto:a@example.test"`}}},
		config.RecordSet{Name: "caa", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.5"}}},
	)
	if err := new(config.Document).ValidateZone(&zone, func(string) bool { return false }); err != nil {
		t.Fatalf("the configuration refuses the long CAA values: %v", err)
	}
	s, ds := signedZones(t, []config.Zone{zone}, "example.test.")
	r := exchange(t, "tcp", s.Addr(), doQuery("caa.example.test.", dns.TypeCAA, 1232))
	got := map[string]string{}
	for _, rr := range r.Answer {
		if c, ok := rr.(*dns.CAA); ok {
			got[c.Tag] = c.Value
		}
	}
	if r.Rcode != dns.RcodeSuccess || got["issue"] != ascii || got["issuewild"] != utf || got["iodef"] != "mailto:a@example.test" {
		t.Fatalf("caa CAA over TCP: rcode %s, values %q", dns.RcodeToString[r.Rcode], got)
	}
	u, d := validatorsOf(t, s, "example.test.", ds["example.test."])
	ur := u.Ask(t, "caa.example.test.", dns.TypeCAA)
	unboundtest.Secure(t, "caa CAA (unbound)", ur)
	if n := len(ur.Answer); n < 3 {
		t.Fatalf("caa CAA (unbound): %d records:\n%v", n, ur)
	}
	unboundtest.Secure(t, "caa A (unbound)", u.Ask(t, "caa.example.test.", dns.TypeA))
	d.Secure(t, "caa CAA", "caa.example.test.", dns.TypeCAA, true)
	d.Secure(t, "caa CAA over UDP (TC, then TCP)", "caa.example.test.", dns.TypeCAA, false)
}

// The largest TXT set the configuration accepts, at the apex of a zone with a short name
// (where compression saves least), in a zone signed by two keys at once (a CSK rollover):
// over TCP the whole set and both signatures are answered and validate (unbound, delv);
// over UDP the answer is truncated to a valid empty response that sends the resolver to TCP.
func TestValidatorsLargeSignedSetTCP(t *testing.T) {
	const apex, n = "a.test.", 16
	build := func(vlen int) config.Zone {
		recs := make([]config.Record, n)
		for i := range recs {
			recs[i].Value = fmt.Sprintf("%02d", i) + strings.Repeat("x", vlen-2)
		}
		return smallZone(apex, config.RecordSet{Name: "@", Type: config.TypeTXT, Records: recs})
	}
	valid := func(vlen int) bool {
		z := build(vlen)
		return new(config.Document).ValidateZone(&z, func(string) bool { return false }) == nil
	}
	lo, hi := 100, rdata.MaxValue // valid(lo), !valid(hi + 1)
	if !valid(lo) {
		t.Fatalf("%d records of %d bytes refused", n, lo)
	}
	for lo < hi {
		if mid := (lo + hi + 1) / 2; valid(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	zone := build(lo)
	s := startServer(t, Config{})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{zone}, nil))
	sealer, err := dnssec.NewSealer([]byte("validators-test-seal-secret-0000"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	zk, err := dnssec.InitialKeys(apex, dnssec.SchemeCombined, sealer, now)
	if err != nil {
		t.Fatal(err)
	}
	both, err := dnssec.Rollover(zk, dnssec.RoleCSK, sealer, now, dnssec.Timing{DNSKEYTTL: 1, MaxTTL: 1, Margin: 1})
	if err != nil {
		t.Fatal(err)
	}
	sg, err := dnssec.NewSigner(both, sealer, dnssec.SignerConfig{DNSKEYTTL: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSigners(map[string]*dnssec.Signer{apex: sg})

	r := exchange(t, "tcp", s.Addr(), doQuery(apex, dns.TypeTXT, 1232))
	sigs := 0
	for _, rr := range r.Answer {
		if _, ok := rr.(*dns.RRSIG); ok {
			sigs++
		}
	}
	if r.Truncated || r.Rcode != dns.RcodeSuccess || len(r.Answer) != n+2 || sigs != 2 {
		t.Fatalf("%d records of %d bytes over TCP: tc %v, rcode %s, %d records (%d signatures), want %d and 2",
			n, lo, r.Truncated, dns.RcodeToString[r.Rcode], len(r.Answer), sigs, n+2)
	}
	r = exchange(t, "udp", s.Addr(), doQuery(apex, dns.TypeTXT, 1232))
	if !r.Truncated || r.Rcode != dns.RcodeSuccess || len(r.Answer)+len(r.Ns) != 0 || r.IsEdns0() == nil || !r.IsEdns0().Do() {
		t.Fatalf("over UDP: want an empty truncated NOERROR response with the OPT record, got\n%v", r)
	}
	for i, key := range both.Keys[:2] {
		ds := key.DS(apex, 3600)
		u, d := validatorsOf(t, s, apex, ds)
		ur := u.Ask(t, apex, dns.TypeTXT)
		unboundtest.Secure(t, fmt.Sprintf("large set, trusting key %d (unbound)", i), ur)
		if len(ur.Answer) < n {
			t.Fatalf("large set (unbound): %d records", len(ur.Answer))
		}
		d.Secure(t, fmt.Sprintf("large set, trusting key %d", i), apex, dns.TypeTXT, true)
	}
}
