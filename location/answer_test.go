package location

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestAnswers checks each rule of an authoritative answer against a running server over UDP.
func TestAnswers(t *testing.T) {
	s := startServer(t, Config{})
	addr := s.Addr()
	cases := []struct {
		name      string
		q         *dns.Msg
		rcode     int
		aa        bool
		answer    []string // values, in order; nil means none
		anyOrder  bool
		authority []uint16 // types of the authority section
		extra     int      // records in the additional section besides OPT
		negTTL    uint32   // when not 0, the TTL of the SOA in the authority section
	}{
		{name: "A at a name", q: query("www.example.test.", dns.TypeA, 0), aa: true, answer: []string{"192.0.2.1"}},
		{name: "TXT keeps quotes and spaces", q: query("www.example.test.", dns.TypeTXT, 0), aa: true, answer: []string{`v=1 \"quoted\"`}},
		{name: "AAAA", q: query("v6.example.test.", dns.TypeAAAA, 0), aa: true, answer: []string{"2001:db8::1"}},
		{name: "outside hosted zones is REFUSED", q: query("www.example.org.", dns.TypeA, 0), rcode: dns.RcodeRefused},
		{name: "parent of a hosted zone is REFUSED", q: query("test.", dns.TypeSOA, 0), rcode: dns.RcodeRefused},
		{name: "NXDOMAIN with SOA and negative TTL MINIMUM", q: query("nope.example.test.", dns.TypeA, 0),
			rcode: dns.RcodeNameError, aa: true, authority: []uint16{dns.TypeSOA}, negTTL: 120},
		{name: "NXDOMAIN below an existing name", q: query("x.www.example.test.", dns.TypeA, 0),
			rcode: dns.RcodeNameError, aa: true, authority: []uint16{dns.TypeSOA}, negTTL: 120},
		{name: "NXDOMAIN with negative TTL from the SOA TTL", q: query("nope.ns.vigil.test.", dns.TypeA, 0),
			rcode: dns.RcodeNameError, aa: true, authority: []uint16{dns.TypeSOA}, negTTL: 60},
		{name: "NODATA", q: query("www.example.test.", dns.TypeAAAA, 0), aa: true, authority: []uint16{dns.TypeSOA}, negTTL: 120},
		{name: "empty non-terminal is NODATA", q: query("b.deep.example.test.", dns.TypeA, 0), aa: true, authority: []uint16{dns.TypeSOA}, negTTL: 120},
		{name: "SOA at the apex", q: query("example.test.", dns.TypeSOA, 0), aa: true,
			answer: []string{"example.test.\t900\tIN\tSOA\tns-1.ns.vigil.test. hostmaster.example.test. 1 7200 900 1209600 120"}},
		{name: "NS at the apex from the shard", q: query("example.test.", dns.TypeNS, 0), aa: true, answer: []string{
			"example.test.\t172800\tIN\tNS\tns-1.ns.vigil.test.", "example.test.\t172800\tIN\tNS\tns-2.ns.vigil.test.",
			"example.test.\t172800\tIN\tNS\tns-3.ns.vigil.test.", "example.test.\t172800\tIN\tNS\tns-4.ns.vigil.test."}},
		{name: "NS at the apex with glue for in-zone names", q: query("ns.vigil.test.", dns.TypeNS, 0), aa: true, answer: []string{
			"ns.vigil.test.\t172800\tIN\tNS\tns-1.ns.vigil.test.", "ns.vigil.test.\t172800\tIN\tNS\tns-2.ns.vigil.test.",
			"ns.vigil.test.\t172800\tIN\tNS\tns-5.ns.vigil.test.", "ns.vigil.test.\t172800\tIN\tNS\tns-6.ns.vigil.test."}, extra: 4},
		{name: "a name server's address", q: query("ns-5.ns.vigil.test.", dns.TypeA, 0), aa: true, answer: []string{"127.0.0.15"}},
		{name: "MX at the apex", q: query("example.test.", dns.TypeMX, 0), aa: true, answer: []string{"example.test.\t60\tIN\tMX\t10 mail.example.test."}},
		{name: "CNAME", q: query("alias.example.test.", dns.TypeA, 0), aa: true, answer: []string{"www.example.test.", "192.0.2.1"}},
		{name: "CNAME asked for itself", q: query("alias.example.test.", dns.TypeCNAME, 0), aa: true, answer: []string{"www.example.test."}},
		{name: "CNAME chain followed", q: query("chain1.example.test.", dns.TypeA, 0), aa: true,
			answer: []string{"chain2.example.test.", "www.example.test.", "192.0.2.1"}},
		{name: "CNAME loop stops", q: query("loop1.example.test.", dns.TypeA, 0), aa: true,
			answer: []string{"loop2.example.test.", "loop1.example.test."}},
		{name: "CNAME to a missing name is NXDOMAIN (RFC 6604)", q: query("dangling.example.test.", dns.TypeA, 0),
			rcode: dns.RcodeNameError, aa: true, answer: []string{"nowhere.example.test."}, authority: []uint16{dns.TypeSOA}, negTTL: 120},
		{name: "CNAME out of the zone is not followed", q: query("out.example.test.", dns.TypeA, 0), aa: true,
			answer: []string{"www.elsewhere.net."}},
		{name: "delegation is a referral with glue", q: query("host.sub.example.test.", dns.TypeA, 0),
			authority: []uint16{dns.TypeNS, dns.TypeNS}, extra: 1},
		{name: "ANY is answered minimally: one record set", q: query("www.example.test.", dns.TypeANY, 0), aa: true,
			answer: []string{"192.0.2.1"}},
		{name: "ANY at a missing name", q: query("nope.example.test.", dns.TypeANY, 0),
			rcode: dns.RcodeNameError, aa: true, authority: []uint16{dns.TypeSOA}, negTTL: 120},
		{name: "zone transfer REFUSED", q: query("example.test.", dns.TypeAXFR, 0), rcode: dns.RcodeRefused},
		{name: "question case preserved", q: query("WwW.ExAmPlE.tEsT.", dns.TypeA, 0), aa: true, answer: []string{"192.0.2.1"}},
		{name: "EDNS0 answered", q: query("www.example.test.", dns.TypeA, 4096), aa: true, answer: []string{"192.0.2.1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := exchange(t, "udp", addr, c.q)
			if r.Rcode != c.rcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[c.rcode])
			}
			if r.Authoritative != c.aa {
				t.Errorf("AA %v, want %v", r.Authoritative, c.aa)
			}
			if r.RecursionAvailable {
				t.Error("RA set")
			}
			if !r.RecursionDesired {
				t.Error("RD not copied from the query")
			}
			if !r.Response || r.Id != c.q.Id {
				t.Errorf("QR %v, ID %d for query %d", r.Response, r.Id, c.q.Id)
			}
			if len(r.Question) != 1 || r.Question[0].Name != c.q.Question[0].Name {
				t.Errorf("question %v, want %v", r.Question, c.q.Question)
			}
			if got := values(r); !slices.Equal(got, c.answer) {
				t.Errorf("answer %q, want %q", got, c.answer)
			}
			var auth []uint16
			for _, rr := range r.Ns {
				auth = append(auth, rr.Header().Rrtype)
				if soa, ok := rr.(*dns.SOA); ok && c.negTTL != 0 && soa.Hdr.Ttl != c.negTTL {
					t.Errorf("negative TTL %d, want %d", soa.Hdr.Ttl, c.negTTL)
				}
			}
			if !slices.Equal(auth, c.authority) {
				t.Errorf("authority types %v, want %v", auth, c.authority)
			}
			extra := 0
			for _, rr := range r.Extra {
				if rr.Header().Rrtype != dns.TypeOPT {
					extra++
				}
			}
			if extra != c.extra {
				t.Errorf("%d additional records, want %d: %v", extra, c.extra, r.Extra)
			}
			if (c.q.IsEdns0() != nil) != (r.IsEdns0() != nil) {
				t.Errorf("query EDNS0 %v, response EDNS0 %v", c.q.IsEdns0() != nil, r.IsEdns0() != nil)
			}
			if opt := r.IsEdns0(); opt != nil && opt.UDPSize() != DefaultUDPSize {
				t.Errorf("advertised UDP size %d, want %d", opt.UDPSize(), DefaultUDPSize)
			}
		})
	}
}

// TestTruncation checks that an answer too big for UDP comes back empty with TC set, and
// whole over TCP.
func TestTruncation(t *testing.T) {
	s := startServer(t, Config{})
	for _, size := range []uint16{0, 1232, 4096} {
		r := exchange(t, "udp", s.Addr(), query("big.example.test.", dns.TypeTXT, size))
		if !r.Truncated || len(r.Answer) != 0 || r.Rcode != dns.RcodeSuccess {
			t.Errorf("UDP, EDNS size %d: TC %v, %d answers, rcode %d; want TC and none", size, r.Truncated, len(r.Answer), r.Rcode)
		}
		if (size > 0) != (r.IsEdns0() != nil) {
			t.Errorf("UDP, EDNS size %d: OPT in response %v", size, r.IsEdns0() != nil)
		}
		c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
		r2, _, err := c.Exchange(query("big.example.test.", dns.TypeTXT, size), s.Addr().String())
		if err == nil && r2.Len() > max(512, min(int(size), DefaultUDPSize)) {
			t.Errorf("UDP response of %d bytes for EDNS size %d", r2.Len(), size)
		}
	}
	r := exchange(t, "tcp", s.Addr(), query("big.example.test.", dns.TypeTXT, 1232))
	if r.Truncated || len(r.Answer) != 10 {
		t.Errorf("TCP: TC %v, %d answers; want 10", r.Truncated, len(r.Answer))
	}
	// A small answer over UDP without EDNS0 is not truncated.
	r = exchange(t, "udp", s.Addr(), query("mv.example.test.", dns.TypeA, 0))
	if r.Truncated || len(r.Answer) != 3 {
		t.Errorf("small UDP answer: TC %v, %d answers", r.Truncated, len(r.Answer))
	}
}

// TestHeaderRules checks BADVERS, NOTIMP, FORMERR, classes and dropped packets on a socket.
func TestHeaderRules(t *testing.T) {
	s := startServer(t, Config{})
	addr := s.Addr()

	q := query("www.example.test.", dns.TypeA, 1232)
	q.IsEdns0().SetVersion(1)
	r := exchange(t, "udp", addr, q)
	if r.Rcode != dns.RcodeBadVers || r.IsEdns0() == nil || len(r.Answer) != 0 {
		t.Errorf("EDNS version 1: rcode %d, OPT %v, %d answers; want BADVERS with OPT", r.Rcode, r.IsEdns0() != nil, len(r.Answer))
	}

	for _, op := range []int{dns.OpcodeUpdate, dns.OpcodeNotify, dns.OpcodeStatus, 3, 15} {
		q := query("example.test.", dns.TypeSOA, 0)
		q.Opcode = op
		r := exchange(t, "udp", addr, q)
		if r.Rcode != dns.RcodeNotImplemented || r.Opcode != op {
			t.Errorf("opcode %d: rcode %s, opcode %d; want NOTIMP", op, dns.RcodeToString[r.Rcode], r.Opcode)
		}
	}

	q = query("www.example.test.", dns.TypeA, 0)
	q.Question[0].Qclass = dns.ClassCHAOS
	if r := exchange(t, "udp", addr, q); r.Rcode != dns.RcodeRefused {
		t.Errorf("class CH: rcode %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}

	q = query("www.example.test.", dns.TypeA, 0)
	q.Question = append(q.Question, q.Question[0])
	if r := exchange(t, "udp", addr, q); r.Rcode != dns.RcodeFormatError {
		t.Errorf("two questions: rcode %s, want FORMERR", dns.RcodeToString[r.Rcode])
	}

	q = query("www.example.test.", dns.TypeA, 1232)
	q.Extra = append(q.Extra, q.Extra[0])
	if r := exchange(t, "udp", addr, q); r.Rcode != dns.RcodeFormatError {
		t.Errorf("two OPT records: rcode %s, want FORMERR", dns.RcodeToString[r.Rcode])
	}

	// Raw packets: garbage after a header gets FORMERR, a short packet or a response nothing;
	// the server answers the next query either way.
	conn, err := net.Dial("udp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw := [][]byte{
		{0x12, 0x34, 0x01},
		{0x12, 0x34, 0x81, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w', 'w', 'w', 0, 0, 1, 0, 1},
		{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1},
		{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 63, 'a'},
	}
	want := []int{-1, -1, dns.RcodeFormatError, dns.RcodeFormatError}
	buf := make([]byte, 4096)
	for i, p := range raw {
		if _, err := conn.Write(p); err != nil {
			t.Fatal(err)
		}
		wait := 300 * time.Millisecond // for the silence of a dropped packet
		if want[i] >= 0 {
			wait = 2 * time.Second
		}
		conn.SetReadDeadline(time.Now().Add(wait))
		n, err := conn.Read(buf)
		switch {
		case want[i] < 0 && err == nil:
			t.Errorf("packet %d: got a %d-byte response, want none", i, n)
		case want[i] >= 0 && err != nil:
			t.Errorf("packet %d: no response (%v), want %s", i, err, dns.RcodeToString[want[i]])
		case want[i] >= 0:
			var r dns.Msg
			if err := r.Unpack(buf[:n]); err != nil || r.Rcode != want[i] || r.Id != 0x1234 || !r.Response {
				t.Errorf("packet %d: response %v (%v), want %s", i, &r, err, dns.RcodeToString[want[i]])
			}
		}
	}
	if r := exchange(t, "udp", addr, query("www.example.test.", dns.TypeA, 0)); len(r.Answer) != 1 {
		t.Errorf("after malformed packets: %v", r)
	}
}

// TestTCPSeveralQueries checks that one TCP connection carries several queries in turn.
func TestTCPSeveralQueries(t *testing.T) {
	s := startServer(t, Config{})
	conn, err := dns.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, name := range []string{"www.example.test.", "v6.example.test.", "nope.example.test."} {
		q := query(name, dns.TypeA, 0)
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		if err := conn.WriteMsg(q); err != nil {
			t.Fatal(err)
		}
		r, err := conn.ReadMsg()
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		if r.Id != q.Id || r.Question[0].Name != name {
			t.Errorf("query %d: response %v", i, r)
		}
	}
}

// TestIPv6Listener serves on ::1 when the machine has it, over UDP and TCP.
func TestIPv6Listener(t *testing.T) {
	probe, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	probe.Close()
	s := startServer(t, Config{Addr: "[::1]:0"})
	if !s.Addr().Addr().Is6() {
		t.Fatalf("listening on %v", s.Addr())
	}
	for _, network := range []string{"udp", "tcp"} {
		if r := exchange(t, network, s.Addr(), query("www.example.test.", dns.TypeA, 1232)); len(r.Answer) != 1 {
			t.Errorf("%s over IPv6: %v", network, r)
		}
	}
}

// dialTCPFrom opens a DNS connection to the server from the local address src.
func dialTCPFrom(t *testing.T, s *Server, src string) *dns.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &dns.Conn{Conn: c}
}

// askOnce asks one query on c within timeout and reports whether it was answered.
func askOnce(c *dns.Conn, timeout time.Duration) bool {
	c.SetDeadline(time.Now().Add(timeout))
	if err := c.WriteMsg(query("www.example.test.", dns.TypeA, 0)); err != nil {
		return false
	}
	_, err := c.ReadMsg()
	return err == nil
}

// TestTCPConnLimit checks that connections over the limit are closed while those within it
// are served. The connections come from different networks, so that only the listener's
// limit applies (one network may hold one of two).
func TestTCPConnLimit(t *testing.T) {
	s := startServer(t, Config{MaxTCPConns: 2})
	var held []*dns.Conn
	for _, src := range []string{"127.0.1.1", "127.0.2.1"} {
		c := dialTCPFrom(t, s, src)
		// A query and its answer make sure the server has taken the connection.
		if !askOnce(c, 2*time.Second) {
			t.Fatalf("a connection from %s within the limit was not served", src)
		}
		held = append(held, c)
	}
	if askOnce(dialTCPFrom(t, s, "127.0.3.1"), 2*time.Second) {
		t.Error("a third connection was served")
	}
	held[0].Close()
	// The freed slot serves a new connection (the server notices the close first).
	var served bool
	for range 20 {
		c := dialTCPFrom(t, s, "127.0.3.1")
		served = askOnce(c, time.Second)
		c.Close()
		if served {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !served {
		t.Error("no connection served after one closed")
	}
}

// TestTCPConnsPerClientNetwork: a client network's connections count together, from
// whichever of its addresses they come (a /24 here); beyond its share they are closed at
// once while another network's are served; the share stays below the listener's limit.
func TestTCPConnsPerClientNetwork(t *testing.T) {
	s := startServer(t, Config{MaxTCPConns: 8, MaxTCPConnsPerClient: 2})
	for _, src := range []string{"127.0.1.1", "127.0.1.2"} {
		if !askOnce(dialTCPFrom(t, s, src), 2*time.Second) {
			t.Fatalf("a connection from %s within its network's share was not served", src)
		}
	}
	if askOnce(dialTCPFrom(t, s, "127.0.1.3"), 2*time.Second) {
		t.Error("a third connection of 127.0.1.0/24 was served")
	}
	if !askOnce(dialTCPFrom(t, s, "127.0.2.1"), 2*time.Second) {
		t.Error("another network's connection was not served")
	}
	if got := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("main", dropTCPClient)); got != 1 {
		t.Errorf("dropped over the network's share: %v, want 1", got)
	}
	one, err := New(Config{Addr: "127.0.0.1:0", MaxTCPConns: 4, MaxTCPConnsPerClient: 4})
	if err != nil {
		t.Fatal(err)
	}
	if one.cfg.MaxTCPConnsPerClient != 3 {
		t.Errorf("a network's share of 4 connections: %d, want 3", one.cfg.MaxTCPConnsPerClient)
	}
}

// TestServeAgain checks that a server stops when its context ends and can serve again.
func TestServeAgain(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(t, testZones(), testShards()))
	for round := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		if err := s.Listen(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx) }()
		if r := exchange(t, "udp", s.Addr(), query("www.example.test.", dns.TypeA, 0)); len(r.Answer) != 1 {
			t.Errorf("round %d: %v", round, r)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Serve did not return", round)
		}
	}
	if err := s.Serve(context.Background()); err == nil {
		t.Error("Serve without Listen did not fail")
	}
}
