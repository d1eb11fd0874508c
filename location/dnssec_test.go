package location

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/dnssec"
)

// signedServer starts a server with the test zones and example.test signed by fresh keys of
// scheme, and returns it with the signer.
func signedServer(t *testing.T, scheme string) (*Server, *dnssec.Signer) {
	t.Helper()
	s := startServer(t, Config{})
	sg := testSigner(t, scheme)
	s.SetSigners(map[string]*dnssec.Signer{"Example.Test": sg})
	return s, sg
}

// testSigner returns a signer of example.test with fresh keys of scheme.
func testSigner(t testing.TB, scheme string) *dnssec.Signer {
	t.Helper()
	sealer, err := dnssec.NewSealer([]byte("location-test-seal-secret-000000"))
	if err != nil {
		t.Fatal(err)
	}
	zk, err := dnssec.InitialKeys("example.test.", scheme, sealer, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{DNSKEYTTL: 300})
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

// doQuery returns a query with EDNS0 of size and the DO bit.
func doQuery(name string, qtype uint16, size uint16) *dns.Msg {
	m := query(name, qtype, 0)
	m.SetEdns0(size, true)
	return m
}

// verifySection checks that every record set of rrs (other than RRSIG and OPT) is followed by
// a signature that keys verify, and returns the record sets' types.
func verifySection(t *testing.T, keys []dns.RR, rrs []dns.RR) []uint16 {
	t.Helper()
	var types []uint16
	for i := 0; i < len(rrs); {
		j := rrsetEnd(rrs, i)
		set := rrs[i:j]
		h := set[0].Header()
		types = append(types, h.Rrtype)
		var sig *dns.RRSIG
		for _, rr := range rrs[j:] {
			if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == h.Rrtype && s.Hdr.Name == h.Name {
				sig = s
				break
			}
		}
		if sig == nil {
			t.Fatalf("%s %s: no signature in %v", h.Name, dns.TypeToString[h.Rrtype], rrs)
		}
		ok := false
		for _, k := range keys {
			if dk := k.(*dns.DNSKEY); dk.KeyTag() == sig.KeyTag && sig.Verify(dk, set) == nil {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("%s %s: the signature does not verify", h.Name, dns.TypeToString[h.Rrtype])
		}
		for j < len(rrs) && rrs[j].Header().Rrtype == dns.TypeRRSIG {
			j++
		}
		i = j
	}
	return types
}

// With the DO bit, a signed zone's answers carry verifiable signatures, its DNSKEY set sits
// at the apex, a missing name is a NOERROR black lie and a missing type an NSEC listing the
// name's types; without DO nothing changes.
func TestSignedAnswers(t *testing.T) {
	s, sg := signedServer(t, dnssec.SchemeSplit)
	addr := s.Addr()
	keys := sg.AppendDNSKEYs(nil, time.Now())

	r := exchange(t, "udp", addr, doQuery("example.test.", dns.TypeDNSKEY, 1232))
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 3 || !r.Authoritative {
		t.Fatalf("DNSKEY: %v", r)
	}
	verifySection(t, keys, r.Answer)

	r = exchange(t, "udp", addr, doQuery("www.example.test.", dns.TypeA, 1232))
	if got := verifySection(t, keys, r.Answer); !slices.Equal(got, []uint16{dns.TypeA}) {
		t.Fatalf("www A: %v", r)
	}
	r = exchange(t, "udp", addr, doQuery("chain1.example.test.", dns.TypeA, 1232))
	if got := verifySection(t, keys, r.Answer); len(got) != 3 {
		t.Fatalf("chain: %v", r)
	}

	r = exchange(t, "udp", addr, doQuery("nope.example.test.", dns.TypeA, 1232))
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Fatalf("missing name: %v", r)
	}
	verifySection(t, keys, r.Ns)
	nsec := findNSEC(r.Ns)
	if nsec == nil || nsec.Hdr.Name != "nope.example.test." || nsec.NextDomain != `\000.nope.example.test.` ||
		!slices.Contains(nsec.TypeBitMap, dns.TypeNXNAME) {
		t.Fatalf("missing name: NSEC %v", nsec)
	}

	r = exchange(t, "udp", addr, doQuery("www.example.test.", dns.TypeMX, 1232))
	verifySection(t, keys, r.Ns)
	if nsec = findNSEC(r.Ns); nsec == nil || !slices.Equal(nsec.TypeBitMap, []uint16{dns.TypeA, dns.TypeTXT, dns.TypeRRSIG, dns.TypeNSEC}) {
		t.Fatalf("no data: NSEC %v", nsec)
	}
	r = exchange(t, "udp", addr, doQuery("example.test.", dns.TypeAAAA, 1232))
	if nsec = findNSEC(r.Ns); nsec == nil || !slices.Contains(nsec.TypeBitMap, dns.TypeDNSKEY) {
		t.Fatalf("apex no data: NSEC %v", nsec)
	}

	// A referral to an unsigned child proves that it has no DS.
	r = exchange(t, "udp", addr, doQuery("x.sub.example.test.", dns.TypeA, 1232))
	if nsec = findNSEC(r.Ns); nsec == nil || nsec.Hdr.Name != "sub.example.test." || slices.Contains(nsec.TypeBitMap, dns.TypeDS) {
		t.Fatalf("referral: %v", r)
	}

	// Without DO: no signatures, NXDOMAIN as before.
	r = exchange(t, "udp", addr, query("nope.example.test.", dns.TypeA, 1232))
	if r.Rcode != dns.RcodeNameError || findNSEC(r.Ns) != nil {
		t.Fatalf("missing name without DO: %v", r)
	}
	r = exchange(t, "udp", addr, query("www.example.test.", dns.TypeA, 1232))
	for _, rr := range r.Answer {
		if rr.Header().Rrtype == dns.TypeRRSIG {
			t.Fatalf("signature without DO: %v", r)
		}
	}
	// Another zone hosted beside it stays unsigned.
	r = exchange(t, "udp", addr, doQuery("ns.vigil.test.", dns.TypeSOA, 1232))
	if len(r.Answer) != 1 {
		t.Fatalf("unsigned zone: %v", r)
	}
}

// A signed answer larger than the client's UDP size is truncated, and answered whole over TCP.
func TestSignedLargeAnswerOverTCP(t *testing.T) {
	s, sg := signedServer(t, dnssec.SchemeCombined)
	keys := sg.AppendDNSKEYs(nil, time.Now())
	r := exchange(t, "udp", s.Addr(), doQuery("big.example.test.", dns.TypeTXT, 1232))
	if !r.Truncated || len(r.Answer) != 0 {
		t.Fatalf("udp: truncated %v, %d records", r.Truncated, len(r.Answer))
	}
	r = exchange(t, "tcp", s.Addr(), doQuery("big.example.test.", dns.TypeTXT, 1232))
	if r.Truncated || len(r.Answer) != 11 {
		t.Fatalf("tcp: truncated %v, %d records: %v", r.Truncated, len(r.Answer), r)
	}
	verifySection(t, keys, r.Answer)
}

func findNSEC(rrs []dns.RR) *dns.NSEC {
	for _, rr := range rrs {
		if n, ok := rr.(*dns.NSEC); ok {
			return n
		}
	}
	return nil
}

// processCPU returns the CPU time (user and system) this process has used, in nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkRespondSigned measures the in-process query path for the same questions without
// the DO bit, with it from the signature cache, and with it signing every answer anew (a
// cache of one signature, over two questions in turn): what online signing costs a query.
func BenchmarkRespondSigned(b *testing.B) {
	for _, c := range []struct {
		name  string
		do    bool
		cache int
	}{
		{"unsigned", false, 0},
		{"signed-cached", true, 0},
		{"signed-uncached", true, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(Config{Addr: "127.0.0.1:0", SignBudget: dnssec.NewBudget(1 << 30)})
			if err != nil {
				b.Fatal(err)
			}
			s.SetSnapshot(mustSnapshot(b, testZones(), testShards()))
			sealer, _ := dnssec.NewSealer([]byte("location-test-seal-secret-000000"))
			zk, _ := dnssec.InitialKeys("example.test.", dnssec.SchemeCombined, sealer, time.Now().Unix())
			sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{CacheSize: c.cache})
			if err != nil {
				b.Fatal(err)
			}
			s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
			var queries [][]byte
			for _, name := range []string{"www.example.test.", "v6.example.test."} {
				m := query(name, dns.TypeA, 0)
				m.SetEdns0(1232, c.do)
				q, _ := m.Pack()
				queries = append(queries, q)
			}
			req := Request{NameServer: -1}
			b.ReportAllocs()
			cpu0 := processCPU(b)
			n := 0
			for i := 0; b.Loop(); i++ {
				if s.Respond(queries[i%2], req) == nil {
					b.Fatal("no response")
				}
				n++
			}
			// On a shared machine wall time per query measures the neighbours too; the CPU
			// time this process spent does not.
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(max(n, 1)), "cpu-ns/op")
		})
	}
}
