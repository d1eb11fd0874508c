package location

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/routing"
)

// cachePair returns a server with the answer cache and one without, serving the test zones
// under the same verdicts.
func cachePair(t testing.TB, cfg Config) (cached, full *Server) {
	t.Helper()
	mk := func(size int) *Server {
		c := cfg
		c.Addr, c.AnswerCache, c.Registerer = "127.0.0.1:0", size, prometheus.NewRegistry()
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		s.SetSnapshot(mustSnapshot(t, testZones(), testShards()))
		s.SetVerdicts(map[string]bool{"s": false, "m2": false})
		return s
	}
	return mk(0), mk(-1)
}

// askFast answers q (with its ID set to id) as a UDP worker does, and returns a copy.
func askFast(s *Server, q *dns.Msg, id uint16, ns int) []byte {
	q.Id = id
	b, err := q.Pack()
	if err != nil {
		panic(err)
	}
	scr := newScratch()
	out, _ := s.answer(scr, b, Request{From: netip.MustParseAddr("192.0.2.99"), NameServer: ns})
	return bytes.Clone(out)
}

// cached reports whether s's cache holds an answer to q, of payload class 0 or its limit.
func cached(s *Server, q *dns.Msg, ns int) bool {
	b, err := q.Pack()
	if err != nil {
		panic(err)
	}
	scr := newScratch()
	fq, ok := scr.readQuery(b, ns, s.udpSize)
	if !ok {
		return false
	}
	for _, class := range []int{0, fq.limit} {
		key, h := scr.setClass(s.cache, fq, class)
		if e, _ := s.cache.lookup(key, h, s.nowNano); e != nil {
			return true
		}
	}
	return false
}

// TestAnswerCacheSameAsFullPath asks every question of the test zones, in every EDNS form and
// on the main listener and a virtual name server, three times of a server with the answer
// cache (the first misses, the second fills, the third is served from the cache) and once of
// a server without, and wants the same bytes but for the ID, which each query sets. Answers
// chosen at random (weighted, multivalue) must not be cached at all.
func TestAnswerCacheSameAsFullPath(t *testing.T) {
	cachedSrv, full := cachePair(t, Config{})
	names := []string{"www", "v6", "@", "fo", "plain", "alias", "chain1", "loop1", "dangling", "out", "big",
		"a.b.deep", "b.deep", "x.sub", "sub", "ns1.sub", "nope", "deep"}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeMX, dns.TypeNS, dns.TypeSOA, dns.TypeCNAME, dns.TypeANY, dns.TypeDS}
	var id uint16
	hits := 0
	for _, ns := range []int{-1, 1, 5} {
		for _, n := range append(names, "wt", "mv") {
			name := "example.test."
			if n != "@" {
				name = n + "." + name
			}
			for _, qt := range types {
				for _, edns := range []struct {
					size uint16
					do   bool
				}{{0, false}, {512, false}, {1232, false}, {1232, true}, {4096, true}} {
					q := query(name, qt, 0)
					if edns.size > 0 {
						q.SetEdns0(edns.size, edns.do)
					}
					what := fmt.Sprintf("ns %d, %s %s, EDNS %d DO %v", ns, name, dns.TypeToString[qt], edns.size, edns.do)
					var got []byte
					for range 3 {
						id++
						got = askFast(cachedSrv, q, id, ns)
					}
					want := askFast(full, q, id, ns)
					if n == "wt" || n == "mv" {
						if cached(cachedSrv, q, ns) && qt == dns.TypeA {
							t.Errorf("%s: an answer chosen at random is cached", what)
						}
						continue
					}
					if cached(cachedSrv, q, ns) {
						hits++
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s: the cached server answers\n%v\nthe full path\n%v", what, unpacked(got), unpacked(want))
					}
				}
			}
		}
	}
	if hits == 0 {
		t.Fatal("no answer was cached: the test compares nothing")
	}
	t.Logf("%d questions answered from the cache", hits)
}

// unpacked returns a response's text, or why it is not one.
func unpacked(b []byte) string {
	if b == nil {
		return "(no response)"
	}
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		return fmt.Sprintf("(%v: %x)", err, b)
	}
	return m.String()
}

// TestAnswerCachePatchesIDCaseAndFlags fills the cache with a lower-case query, then asks the
// same question with another ID, in mixed case, with RD and CD turned the other way: the
// answer must carry the new query's ID, its question as spelled, and its RD and CD bits.
// Then the mixed-case query fills and the lower-case one is served: the same.
func TestAnswerCachePatchesIDCaseAndFlags(t *testing.T) {
	for _, first := range []string{"fo.example.test.", "Fo.EXAMPLE.test."} {
		s, _ := cachePair(t, Config{})
		q := query(first, dns.TypeA, 1232)
		for i := range 3 {
			askFast(s, q, uint16(100+i), -1)
		}
		if !cached(s, q, -1) {
			t.Fatal("the answer is not cached")
		}
		for i, spelled := range []string{"fo.example.test.", "FO.example.TEST.", "fO.ExAmPlE.tEsT."} {
			q := query(spelled, dns.TypeA, 1232)
			q.RecursionDesired = i%2 == 1
			q.CheckingDisabled = i%2 == 0
			id := uint16(0xBEEF + i)
			r := new(dns.Msg)
			if err := r.Unpack(askFast(s, q, id, -1)); err != nil {
				t.Fatal(err)
			}
			switch {
			case r.Id != id:
				t.Errorf("filled by %s, asked as %s: ID %#x, want %#x", first, spelled, r.Id, id)
			case len(r.Question) != 1 || r.Question[0].Name != spelled:
				t.Errorf("filled by %s, asked as %s: question %v", first, spelled, r.Question)
			case r.RecursionDesired != q.RecursionDesired || r.CheckingDisabled != q.CheckingDisabled:
				t.Errorf("filled by %s, asked as %s: RD %v CD %v, want %v %v", first, spelled,
					r.RecursionDesired, r.CheckingDisabled, q.RecursionDesired, q.CheckingDisabled)
			case len(r.Answer) != 1 || !strings.EqualFold(r.Answer[0].Header().Name, spelled) ||
				r.Answer[0].(*dns.A).A.String() != "192.0.2.10" || !r.Authoritative:
				t.Errorf("filled by %s, asked as %s: answer %v", first, spelled, r.Answer)
			}
		}
	}
}

// TestAnswerCacheNotStale fills the cache with answers and then changes, one at a time, what
// they are made of: a verdict through PatchVerdicts and SetVerdicts, the zones through
// SetSnapshot and PatchZones, the locality of a nearest set. The first query after each
// change must get the new answer. A verdict change of one zone leaves the other zone's
// answers cached (the invalidation is by zone).
func TestAnswerCacheNotStale(t *testing.T) {
	s, _ := cachePair(t, Config{})
	s.SetVerdicts(nil)
	fo := query("fo.example.test.", dns.TypeA, 1232)
	other := query("ns.vigil.test.", dns.TypeSOA, 1232)
	answerOf := func(q *dns.Msg) string {
		t.Helper()
		var out []byte
		for range 3 {
			out = askFast(s, q, 1, -1)
		}
		if !cached(s, q, -1) {
			t.Fatalf("%v is not cached", q.Question[0])
		}
		r := new(dns.Msg)
		if err := r.Unpack(out); err != nil {
			t.Fatal(err)
		}
		return strings.Join(values(r), ",")
	}
	if got := answerOf(fo); got != "192.0.2.10" {
		t.Fatalf("fo answers %s, want the primary", got)
	}
	answerOf(other)
	steps := []struct {
		what   string
		change func()
		want   string
	}{
		{"primary down (patch)", func() { s.PatchVerdicts([]VerdictChange{{Check: "p", Healthy: false}}) }, "192.0.2.11"},
		{"primary up (set)", func() { s.SetVerdicts(nil) }, "192.0.2.10"},
		{"primary down (set)", func() { s.SetVerdicts(map[string]bool{"p": false}) }, "192.0.2.11"},
		{"primary up (patch)", func() { s.PatchVerdicts([]VerdictChange{{Check: "p", Healthy: true}}) }, "192.0.2.10"},
	}
	for _, st := range steps {
		st.change()
		askFast(s, fo, 7, -1) // the first query after the change
		if cached(s, other, -1) == false {
			t.Errorf("%s: a verdict change in example.test made an answer of ns.vigil.test stale", st.what)
		}
		r := new(dns.Msg)
		if err := r.Unpack(askFast(s, fo, 8, -1)); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(values(r), ","); got != st.want {
			t.Fatalf("%s: fo answers %s, want %s", st.what, got, st.want)
		}
		if got := answerOf(fo); got != st.want {
			t.Fatalf("%s: fo answers %s from the cache, want %s", st.what, got, st.want)
		}
	}

	// A write: the zones compiled again with fo's primary changed.
	zones := testZones()
	for i, rs := range zones[0].RecordSets {
		if rs.Name == "fo" {
			zones[0].RecordSets[i].Records[0].Value = "192.0.2.99"
		}
	}
	snap := mustSnapshot(t, zones, testShards())
	s.SetSnapshot(snap)
	if got := firstAnswer(t, s, fo); got != "192.0.2.99" {
		t.Fatalf("after SetSnapshot: fo answers %s, want 192.0.2.99", got)
	}
	answerOf(fo)
	zones[0].RecordSets[5].Records[0].Value = "192.0.2.98"
	s.PatchZones(snap.Patch([]ZonePatch{{Apex: "example.test.", Zone: &zones[0], Shard: testShards()["example.test."]}}), []string{"example.test."})
	if got := firstAnswer(t, s, fo); got != "192.0.2.98" {
		t.Fatalf("after PatchZones: fo answers %s, want 192.0.2.98", got)
	}
}

// firstAnswer returns the answer's values of the first query after a change.
func firstAnswer(t *testing.T, s *Server, q *dns.Msg) string {
	t.Helper()
	r := new(dns.Msg)
	if err := r.Unpack(askFast(s, q, 9, -1)); err != nil {
		t.Fatal(err)
	}
	return strings.Join(values(r), ",")
}

// TestAnswerCachePayloadBoundary asks for the big TXT set with EDNS payload sizes around the
// size of its whole answer, in both orders (the small size first, then the large, and back),
// so that an answer cached whole is never served to a query whose limit it exceeds, nor an
// answer truncated for a small limit to a query with room for the whole: each must be what
// the full path answers.
func TestAnswerCachePayloadBoundary(t *testing.T) {
	cachedSrv, full := cachePair(t, Config{UDPSize: 4096})
	whole := askFast(full, query("big.example.test.", dns.TypeTXT, 4096), 1, -1)
	n := len(whole)
	if n <= 512 || n > 4096 {
		t.Fatalf("the whole answer is %d bytes: the test needs one between 512 and 4096", n)
	}
	sizes := []int{n, n - 1, n + 1, n - 1, n, 512, n}
	for round := range 2 {
		for _, size := range sizes {
			q := query("big.example.test.", dns.TypeTXT, uint16(size))
			var got []byte
			for range 3 {
				got = askFast(cachedSrv, q, 2, -1)
			}
			want := askFast(full, q, 2, -1)
			if !bytes.Equal(got, want) {
				t.Fatalf("round %d, payload %d (whole answer %d bytes): cached\n%v\nfull path\n%v", round, size, n, unpacked(got), unpacked(want))
			}
			r := new(dns.Msg)
			if err := r.Unpack(got); err != nil {
				t.Fatal(err)
			}
			if r.Truncated != (size < n) || len(got) > size {
				t.Fatalf("payload %d: TC %v, %d bytes (whole answer %d)", size, r.Truncated, len(got), n)
			}
		}
	}
}

// TestAnswerCacheRRL has the rate limiter limit a client whose answers are cached: the
// cached answers count against its allowance, and past it the client gets slips and drops
// as on the full path.
func TestAnswerCacheRRL(t *testing.T) {
	s, _ := cachePair(t, Config{RRL: RRLConfig{ResponsesPerSecond: 5, Slip: 2}})
	q := query("www.example.test.", dns.TypeA, 1232)
	b, _ := q.Pack()
	scr := newScratch()
	var answered, slipped, dropped int
	for range 20 {
		out, oc := s.answer(scr, b, Request{From: netip.MustParseAddr("198.51.100.7"), NameServer: -1})
		switch {
		case out == nil && oc.drop == dropRRL:
			dropped++
		case oc.slip:
			slipped++
		case out != nil:
			answered++
		}
	}
	// The clock may pass a second boundary once: at most twice the allowance.
	if answered < 5 || answered > 10 || slipped == 0 || dropped == 0 {
		t.Fatalf("20 queries at 5 a second: %d answered, %d slipped, %d dropped", answered, slipped, dropped)
	}
}

// TestAnswerCacheHitAllocatesNothing serves a cached answer, metrics included, and counts the
// allocations.
func TestAnswerCacheHitAllocatesNothing(t *testing.T) {
	s, _ := cachePair(t, Config{})
	for _, name := range []string{"fo.example.test.", "www.example.test.", "nope.example.test."} {
		q := query(name, dns.TypeA, 1232)
		b, _ := q.Pack()
		scr := newScratch()
		req := Request{NameServer: -1}
		for range 3 {
			s.answer(scr, b, req)
		}
		if !cached(s, q, -1) {
			t.Fatalf("%s is not cached", name)
		}
		allocs := testing.AllocsPerRun(200, func() {
			_, oc := s.answer(scr, b, req)
			s.metrics.observe("main", &oc, 0)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations a cached answer, want 0", name, allocs)
		}
	}
}

// TestAnswerCacheRandomNamesNotCached asks many names once each: none is cached (the
// admission wants a second miss), so that a flood of random names leaves the cache as it is.
func TestAnswerCacheRandomNamesNotCached(t *testing.T) {
	s, _ := cachePair(t, Config{})
	for i := range 1000 {
		q := query(fmt.Sprintf("r%d.example.test.", i), dns.TypeA, 1232)
		askFast(s, q, uint16(i), -1)
		if cached(s, q, -1) {
			t.Fatalf("r%d, asked once, is cached", i)
		}
	}
}

// TestAnswerCacheReadQuery checks which queries the fast path reads and which it leaves to
// the full path.
func TestAnswerCacheReadQuery(t *testing.T) {
	base := func() *dns.Msg { return query("www.example.test.", dns.TypeA, 1232) }
	for _, c := range []struct {
		what string
		mod  func(*dns.Msg)
		raw  func([]byte) []byte
		ok   bool
	}{
		{"plain EDNS query", nil, nil, true},
		{"without EDNS", func(m *dns.Msg) { m.Extra = nil }, nil, true},
		{"a cookie", func(m *dns.Msg) {
			m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0102030405060708"}}
		}, nil, true},
		{"client subnet", func(m *dns.Msg) {
			m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: []byte{192, 0, 2, 0}}}
		}, nil, false},
		{"EDNS version 1", func(m *dns.Msg) { m.IsEdns0().SetVersion(1) }, nil, false},
		{"class CH", func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }, nil, false},
		{"opcode NOTIFY", func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }, nil, false},
		{"a response", func(m *dns.Msg) { m.Response = true }, nil, false},
		{"AXFR", func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeAXFR }, nil, false},
		{"two OPT records", func(m *dns.Msg) { m.Extra = append(m.Extra, m.Extra[0]) }, nil, false},
		{"an answer record", func(m *dns.Msg) {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeA, Class: dns.ClassINET}}}
		}, nil, false},
		{"trailing bytes", nil, func(b []byte) []byte { return append(b, 0) }, false},
		{"cut short", nil, func(b []byte) []byte { return b[:len(b)-1] }, false},
		{"an option cut short", nil, func(b []byte) []byte {
			b = append(b, 0, 10, 0, 8, 1, 2)
			binary.BigEndian.PutUint16(b[len(b)-6-2:], 6)
			return b
		}, false},
	} {
		m := base()
		if c.mod != nil {
			c.mod(m)
		}
		b, err := m.Pack()
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if c.raw != nil {
			b = c.raw(b)
		}
		scr := newScratch()
		if _, ok := scr.readQuery(b, -1, DefaultUDPSize); ok != c.ok {
			t.Errorf("%s: read by the fast path %v, want %v", c.what, ok, c.ok)
		}
	}
}

// TestAnswerCacheNearestFollowsLocality caches a nearest set's answer and moves the
// location: the next answer is the new nearest region's.
func TestAnswerCacheNearestFollowsLocality(t *testing.T) {
	s, _ := cachePair(t, Config{})
	zones := testZones()
	zones[0].RecordSets = append(zones[0].RecordSets, nearestSet())
	s.SetSnapshot(mustSnapshot(t, zones, testShards()))
	q := query("near.example.test.", dns.TypeA, 1232)
	s.SetLocality(routing.Locality{Region: "eu", Order: []string{"eu", "us"}})
	for range 3 {
		askFast(s, q, 1, -1)
	}
	if !cached(s, q, -1) {
		t.Fatal("the nearest answer is not cached")
	}
	before := firstAnswer(t, s, q)
	s.SetLocality(routing.Locality{Region: "eu", Order: []string{"eu", "us"}, RTT: map[string]time.Duration{"us": 80 * time.Millisecond}})
	if !cached(s, q, -1) {
		t.Fatal("new round-trip times, the same order of regions: the answer is no longer cached")
	}
	s.SetLocality(routing.Locality{Region: "us", Order: []string{"us", "eu"}})
	if after := firstAnswer(t, s, q); after == before {
		t.Fatalf("after the location moved to us, near answers %s as in eu", after)
	}
}

// nearestSet is a nearest record set with one record in eu and one in us.
func nearestSet() config.RecordSet {
	return config.RecordSet{Name: "near", Type: config.TypeA, Policy: config.PolicyNearest, Records: []config.Record{
		{Value: "192.0.2.60", HealthCheck: "n-eu", Region: "eu"},
		{Value: "192.0.2.61", HealthCheck: "n-us", Region: "us"}}}
}

// TestAnswerCacheRefillsAfterChange checks that an answer cached before a change is cached
// again by the first query after it, not the second: after each change of verdicts the
// names asked again are answered from the cache at once.
func TestAnswerCacheRefillsAfterChange(t *testing.T) {
	s, _ := cachePair(t, Config{})
	q := query("www.example.test.", dns.TypeA, 1232)
	for range 2 {
		askFast(s, q, 1, -1)
	}
	if !cached(s, q, -1) {
		t.Fatal("not cached after two queries")
	}
	s.PatchVerdicts([]VerdictChange{{Check: "p", Healthy: false}})
	if cached(s, q, -1) {
		t.Fatal("still cached after a verdict change of its zone")
	}
	askFast(s, q, 2, -1)
	if !cached(s, q, -1) {
		t.Fatal("not cached again by the first query after the change")
	}
}

// TestUDPSocketsPerCore serves on several SO_REUSEPORT sockets, over IPv4 and IPv6 (when the
// machine has it), and asks from many client sockets, so that the kernel spreads them over
// the server's sockets: every query gets its answer, twice (the second from the cache).
func TestUDPSocketsPerCore(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		if strings.HasPrefix(addr, "[") {
			if c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
				t.Logf("no IPv6 loopback: %v", err)
				continue
			} else {
				c.Close()
			}
		}
		s := startServer(t, Config{Addr: addr, UDPSockets: 3, Workers: 3})
		s.mu.Lock()
		n := len(s.listeners[0].udps)
		s.mu.Unlock()
		if n != 3 {
			t.Fatalf("%s: %d UDP sockets, want 3", addr, n)
		}
		for range 20 {
			for range 2 {
				r := exchange(t, "udp", s.Addr(), query("fo.example.test.", dns.TypeA, 1232))
				if got := values(r); len(got) != 1 || got[0] != "192.0.2.10" {
					t.Fatalf("%s: answer %v", addr, got)
				}
			}
		}
	}
}

// TestAnswerCacheManyNames asks 10,000 names of a zone in turn, as the benchmark's many-names
// mix does: from the third round on, (nearly) every one is answered from the cache, however
// the names share the buckets of the table.
func TestAnswerCacheManyNames(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0", Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	z := config.DefaultZone()
	z.Name = "many.test."
	z.NameServers = []string{"ns1.many.test."}
	const names = 10000
	for i := range names {
		z.RecordSets = append(z.RecordSets, config.RecordSet{Name: fmt.Sprintf("n%d", i), Type: config.TypeA, Policy: config.PolicyFailover,
			Records: []config.Record{{Value: "10.1.0.1", HealthCheck: "up", Role: config.RolePrimary},
				{Value: "10.128.0.1", HealthCheck: "up", Role: config.RoleSecondary}}})
	}
	s.SetSnapshot(mustSnapshot(t, []config.Zone{z}, nil))
	queries := make([][]byte, names)
	for i := range queries {
		queries[i], _ = query(fmt.Sprintf("n%d.many.test.", i), dns.TypeA, 0).Pack()
	}
	scr := newScratch()
	req := Request{NameServer: -1}
	for range 2 {
		for _, q := range queries {
			s.answer(scr, q, req)
		}
	}
	hits := 0
	for _, q := range queries {
		fq, ok := scr.readQuery(q, -1, s.udpSize)
		if !ok {
			t.Fatal("the fast path does not read the query")
		}
		key, h := scr.setClass(s.cache, fq, 0)
		if e, _ := s.cache.lookup(key, h, s.nowNano); e != nil {
			hits++
		}
	}
	if hits < names*99/100 {
		t.Fatalf("%d of %d names cached after two rounds, want 99%% at least", hits, names)
	}
	t.Logf("%d of %d names cached after two rounds", hits, names)
}
