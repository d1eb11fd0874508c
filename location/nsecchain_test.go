package location

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// canonicalKey sorts names as RFC 4034 §6.1 orders its example (given in presentation form,
// with its mixed case), from any starting order.
func TestCanonicalKeyOrder(t *testing.T) {
	want := []string{"example.", "a.example.", "yljkjljk.a.example.", "Z.a.example.", "zABC.a.EXAMPLE.",
		"z.example.", `\001.z.example.`, "*.z.example.", `\200.z.example.`}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		got := slices.Clone(want)
		r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		slices.SortFunc(got, func(a, b string) int { return strings.Compare(string(canonicalKey(a)), string(canonicalKey(b))) })
		if !slices.Equal(got, want) {
			t.Fatalf("sorted %v, want %v", got, want)
		}
	}
}

// chainServer returns an in-process server of testZones with example.test signed and
// proving denials with its NSEC chain, its signer and its DNSKEY records.
func chainServer(t testing.TB) (*Server, *dnssec.Signer, []dns.RR) {
	s, err := New(Config{Addr: "127.0.0.1:0", SignBudget: dnssec.NewBudget(1 << 30)})
	if err != nil {
		t.Fatal(err)
	}
	zones := testZones()
	zones[0].DNSSEC = &config.DNSSEC{Enabled: true, Denial: config.DenialNSEC}
	s.SetSnapshot(mustSnapshot(t, zones, testShards()))
	sg := testSigner(t, dnssec.SchemeCombined)
	s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
	return s, sg, sg.AppendDNSKEYs(nil, time.Now())
}

// respond answers m in process.
func respond(t *testing.T, s *Server, m *dns.Msg) *dns.Msg {
	t.Helper()
	out := s.Respond(packed(t, m), Request{NameServer: -1})
	r := new(dns.Msg)
	if err := r.Unpack(out); err != nil {
		t.Fatalf("%s: %v", m.Question[0].Name, err)
	}
	return r
}

// nsecs returns the NSEC records of rrs.
func nsecs(rrs []dns.RR) []*dns.NSEC {
	var out []*dns.NSEC
	for _, rr := range rrs {
		if n, ok := rr.(*dns.NSEC); ok {
			out = append(out, n)
		}
	}
	return out
}

// covers reports whether nsec covers name in canonical order: owner < name < next, or past
// the last owner when next is the apex.
func covers(nsec *dns.NSEC, name, apex string) bool {
	less := func(a, b string) bool { return string(canonicalKey(a)) < string(canonicalKey(b)) }
	if nsec.NextDomain == apex {
		return less(nsec.Hdr.Name, name)
	}
	return less(nsec.Hdr.Name, name) && less(name, nsec.NextDomain)
}

// A zone with denial nsec proves denials with its chain of real names: a missing name is
// NXDOMAIN with the NSEC that covers it and the one that covers the wildcard at its closest
// encloser; an empty non-terminal is covered by an NSEC whose next name is below it; a
// missing type gets the name's chain NSEC, without the type while its set answers nothing;
// glue below a delegation is not in the chain. Every NSEC verifies, and a flood of missing
// names takes every signature from the cache after the first few.
func TestNSECChainDenial(t *testing.T) {
	s, sg, keys := chainServer(t)
	const apex = "example.test."
	chain := s.Snapshot().zones[apex].chain
	if slices.Contains(chain.names, "ns1.sub.example.test.") || slices.Contains(chain.names, "b.deep.example.test.") {
		t.Fatalf("the chain holds glue or an empty non-terminal: %v", chain.names)
	}
	if chain.names[0] != apex || !slices.Contains(chain.names, "sub.example.test.") {
		t.Fatalf("chain %v: want the apex first and the delegation in it", chain.names)
	}

	for _, name := range []string{"nope.example.test.", "zzz.example.test.", "a.nope.www.example.test.", "nx.b.deep.example.test."} {
		r := respond(t, s, doQuery(name, dns.TypeA, 1232))
		if r.Rcode != dns.RcodeNameError || len(r.Answer) != 0 {
			t.Fatalf("%s: rcode %s, answer %v", name, dns.RcodeToString[r.Rcode], r.Answer)
		}
		verifySection(t, keys, r.Ns)
		ce := s.Snapshot().zones[apex].closestEncloser(name)
		var coversName, coversWild bool
		for _, n := range nsecs(r.Ns) {
			if !slices.Contains(chain.names, n.Hdr.Name) {
				t.Errorf("%s: NSEC at %s, not a name of the chain", name, n.Hdr.Name)
			}
			coversName = coversName || covers(n, name, apex)
			coversWild = coversWild || covers(n, "*."+ce, apex)
		}
		if !coversName || !coversWild {
			t.Errorf("%s: NSECs %v: cover the name %v, the wildcard *.%s %v", name, nsecs(r.Ns), coversName, ce, coversWild)
		}
	}

	r := respond(t, s, doQuery("b.deep.example.test.", dns.TypeA, 1232))
	verifySection(t, keys, r.Ns)
	if ns := nsecs(r.Ns); r.Rcode != dns.RcodeSuccess || len(ns) != 1 || !covers(ns[0], "b.deep.example.test.", apex) ||
		!dns.IsSubDomain("b.deep.example.test.", ns[0].NextDomain) {
		t.Fatalf("empty non-terminal: %v", r)
	}

	r = respond(t, s, doQuery("v6.example.test.", dns.TypeA, 1232))
	verifySection(t, keys, r.Ns)
	if ns := nsecs(r.Ns); len(ns) != 1 || ns[0].Hdr.Name != "v6.example.test." || ns[0].NextDomain == `\000.v6.example.test.` ||
		!slices.Equal(ns[0].TypeBitMap, []uint16{dns.TypeAAAA, dns.TypeRRSIG, dns.TypeNSEC}) {
		t.Fatalf("no data: %v", r)
	}

	// The referral to the unsigned child proves that it has no DS with the cut's chain NSEC.
	r = respond(t, s, doQuery("x.sub.example.test.", dns.TypeA, 1232))
	if ns := nsecs(r.Ns); len(ns) != 1 || ns[0].Hdr.Name != "sub.example.test." || slices.Contains(ns[0].TypeBitMap, dns.TypeDS) ||
		!slices.Contains(chain.names, ns[0].NextDomain) {
		t.Fatalf("referral: %v", r)
	}

	// Health: mv answers nothing with every record down (no_healthy nodata): its NSEC then
	// lists no A, and lists it again once a record is back.
	mvNodata := config.NoHealthyNoData
	zones := testZones()
	zones[0].DNSSEC = &config.DNSSEC{Enabled: true, Denial: config.DenialNSEC}
	for i := range zones[0].RecordSets {
		if zones[0].RecordSets[i].Name == "mv" {
			zones[0].RecordSets[i].NoHealthy = mvNodata
		}
	}
	s.SetSnapshot(mustSnapshot(t, zones, testShards()))
	s.SetVerdicts(map[string]bool{"m1": false, "m2": false, "m3": false})
	r = respond(t, s, doQuery("mv.example.test.", dns.TypeA, 1232))
	verifySection(t, keys, r.Ns)
	if ns := nsecs(r.Ns); len(r.Answer) != 0 || len(ns) != 1 || ns[0].Hdr.Name != "mv.example.test." || slices.Contains(ns[0].TypeBitMap, dns.TypeA) {
		t.Fatalf("nothing healthy: %v", r)
	}
	s.SetVerdicts(map[string]bool{"m1": true, "m2": false, "m3": false})
	r = respond(t, s, doQuery("mv.example.test.", dns.TypeTXT, 1232))
	if ns := nsecs(r.Ns); len(ns) != 1 || !slices.Contains(ns[0].TypeBitMap, dns.TypeA) {
		t.Fatalf("healthy again, TXT: %v", r)
	}

	// A flood of missing names: no new signature after the chain's few.
	signed0, _, _, _ := sg.Stats()
	for i := range 2000 {
		r := respond(t, s, doQuery(fmt.Sprintf("r%08x.example.test.", rand.Uint32()+uint32(i)), dns.TypeA, 1232))
		if r.Rcode != dns.RcodeNameError || len(nsecs(r.Ns)) == 0 {
			t.Fatalf("flood: %v", r)
		}
	}
	if signed, _, _, _ := sg.Stats(); signed-signed0 > uint64(2*len(chain.names)) {
		t.Errorf("a flood of 2,000 missing names made %d signatures; the chain has %d names", signed-signed0, len(chain.names))
	}
}

// With denial nsec, names answered from a wildcard share one signature, the wildcard's: its
// Labels field counts the wildcard's labels (RFC 4035 §5.3.2), it verifies over the answer,
// and the chain's NSEC that covers the name proves that the name itself does not exist. A
// flood of expanded names makes no signature after the first few.
func TestNSECChainWildcardSignedOnce(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0", SignBudget: dnssec.NewBudget(1 << 30)})
	if err != nil {
		t.Fatal(err)
	}
	zones := testZones()
	zones[0].DNSSEC = &config.DNSSEC{Enabled: true, Denial: config.DenialNSEC}
	zones[0].RecordSets = append(zones[0].RecordSets,
		config.RecordSet{Name: "*.w", Type: config.TypeTXT, Records: []config.Record{{Value: `"wild"`}}},
		config.RecordSet{Name: "x.w", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.99"}}})
	s.SetSnapshot(mustSnapshot(t, zones, testShards()))
	sg := testSigner(t, dnssec.SchemeCombined)
	s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
	keys := sg.AppendDNSKEYs(nil, time.Now())
	const apex = "example.test."

	var first string
	for i := range 200 {
		name := fmt.Sprintf("n%d.w.example.test.", i)
		if i%2 == 1 {
			name = fmt.Sprintf("a.n%d.w.example.test.", i)
		}
		r := respond(t, s, doQuery(name, dns.TypeTXT, 1232))
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 2 {
			t.Fatalf("%s: %v", name, r)
		}
		verifySection(t, keys, r.Answer)
		verifySection(t, keys, r.Ns)
		sig, ok := r.Answer[1].(*dns.RRSIG)
		if !ok || sig.Hdr.Name != name || r.Answer[0].Header().Name != name || sig.Labels != 3 {
			t.Fatalf("%s: answer %v: want the TXT and its signature owned by the name, 3 labels", name, r.Answer)
		}
		if first == "" {
			first = sig.Signature
		} else if sig.Signature != first {
			t.Fatalf("%s: signed anew", name)
		}
		coversName := false
		for _, n := range nsecs(r.Ns) {
			coversName = coversName || covers(n, name, apex)
		}
		if !coversName {
			t.Fatalf("%s: no NSEC covers the name: %v", name, r.Ns)
		}
	}
	if signed, _, _, _ := sg.Stats(); signed > 8 {
		t.Errorf("200 names of one wildcard made %d signatures", signed)
	}

	// A name of the zone below the wildcard's parent is answered as itself.
	r := respond(t, s, doQuery("x.w.example.test.", dns.TypeA, 1232))
	verifySection(t, keys, r.Answer)
	if sig, ok := r.Answer[len(r.Answer)-1].(*dns.RRSIG); !ok || sig.Labels != 4 || len(nsecs(r.Ns)) != 0 {
		t.Fatalf("x.w: %v", r)
	}
}

// With denial nsec, a type a wildcard lacks is denied at every expanded name by the chain's
// NSEC that covers the name and the wildcard's own NSEC, without it: no signature per name.
func TestNSECChainWildcardNoData(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0", SignBudget: dnssec.NewBudget(1 << 30)})
	if err != nil {
		t.Fatal(err)
	}
	zones := testZones()
	zones[0].DNSSEC = &config.DNSSEC{Enabled: true, Denial: config.DenialNSEC}
	zones[0].RecordSets = append(zones[0].RecordSets,
		config.RecordSet{Name: "*.w", Type: config.TypeTXT, Records: []config.Record{{Value: `"wild"`}}})
	s.SetSnapshot(mustSnapshot(t, zones, testShards()))
	sg := testSigner(t, dnssec.SchemeCombined)
	s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
	keys := sg.AppendDNSKEYs(nil, time.Now())
	const apex = "example.test."
	for i := range 100 {
		name := fmt.Sprintf("n%d.w.example.test.", i)
		r := respond(t, s, doQuery(name, dns.TypeA, 1232))
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
			t.Fatalf("%s: %v", name, r)
		}
		verifySection(t, keys, r.Ns)
		var coversName, wildNoA bool
		for _, n := range nsecs(r.Ns) {
			coversName = coversName || covers(n, name, apex)
			wildNoA = wildNoA || n.Hdr.Name == "*.w.example.test." && slices.Contains(n.TypeBitMap, dns.TypeTXT) && !slices.Contains(n.TypeBitMap, dns.TypeA)
		}
		if !coversName || !wildNoA {
			t.Fatalf("%s: NSECs %v: cover the name %v, the wildcard's without A %v", name, nsecs(r.Ns), coversName, wildNoA)
		}
	}
	if signed, _, _, _ := sg.Stats(); signed > 8 {
		t.Errorf("100 names of one wildcard without the type made %d signatures", signed)
	}
}

// The NSEC record at a delegation lists NS and DS, the sets the zone is authoritative for
// there, and not the address glue beside them (RFC 4035 §2.3), however the zone proves
// denials and in its transfer image: asked for the DS of a delegation whose name server is
// the cut itself, and for a name below it (a referral, its glue in the additional section).
func TestNSECAtDelegationListsNoGlue(t *testing.T) {
	zone := smallZone("example.test.",
		config.RecordSet{Name: "gl", Type: config.TypeNS, Records: []config.Record{{Value: "gl.example.test."}, {Value: "ns.gl.example.test."}}},
		config.RecordSet{Name: "gl", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.53"}}},
		config.RecordSet{Name: "gl", Type: config.TypeAAAA, Records: []config.Record{{Value: "2001:db8::53"}}},
		config.RecordSet{Name: "ns.gl", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.54"}}},
		config.RecordSet{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.1"}}},
	)
	if err := new(config.Document).ValidateZone(&zone, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	check := func(what string, rrs []dns.RR) {
		t.Helper()
		var found bool
		for _, n := range nsecs(rrs) {
			if n.Hdr.Name != "gl.example.test." {
				continue
			}
			found = true
			if !slices.Contains(n.TypeBitMap, dns.TypeNS) || slices.Contains(n.TypeBitMap, dns.TypeA) || slices.Contains(n.TypeBitMap, dns.TypeAAAA) {
				t.Errorf("%s: the NSEC at the delegation lists %v, want NS and no glue types", what, n.TypeBitMap)
			}
		}
		if !found {
			t.Errorf("%s: no NSEC at gl.example.test. in %v", what, rrs)
		}
	}
	for _, denial := range []string{config.DenialCompact, config.DenialNSEC} {
		z := zone
		z.DNSSEC = &config.DNSSEC{Enabled: true, Denial: denial}
		s := startServer(t, Config{})
		s.SetSnapshot(mustSnapshot(t, []config.Zone{z}, nil))
		sg := testSigner(t, dnssec.SchemeCombined)
		s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
		r := respond(t, s, doQuery("gl.example.test.", dns.TypeDS, 1232))
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
			t.Fatalf("%s: gl DS: want no data, got\n%v", denial, r)
		}
		check(denial+", gl DS", r.Ns)
		r = respond(t, s, doQuery("www.gl.example.test.", dns.TypeA, 1232))
		if len(r.Extra) < 3 {
			t.Fatalf("%s: www.gl A: want a referral with its glue, got\n%v", denial, r)
		}
		check(denial+", the referral", r.Ns)
		if denial == config.DenialNSEC {
			snap := s.Snapshot()
			zz := snap.zoneOf("example.test.")
			img, err := s.buildImage(zz, canonicalNames(zz), s.verdicts.Load(), sg, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			check("the transfer image", img)
		}
	}
}
