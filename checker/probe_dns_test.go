package checker

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// dnsServer is a real miekg/dns server on loopback, UDP and TCP on the same port, answering
// with h. It stops when the test ends.
func dnsServer(t testing.TB, h dns.HandlerFunc) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		pc.Close()
		t.Skipf("TCP port of the UDP listener is taken: %v", err)
	}
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: ln, Handler: h}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() {
		udp.Shutdown()
		tcp.Shutdown()
	})
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// testZone answers as an authoritative server of example.test would: a few record types, a
// name whose TXT answer is too large for UDP, NXDOMAIN for the rest. It counts queries by
// transport.
type testZone struct {
	udp, tcp atomic.Int32
}

func (z *testZone) serve(w dns.ResponseWriter, q *dns.Msg) {
	if w.LocalAddr().Network() == "tcp" {
		z.tcp.Add(1)
	} else {
		z.udp.Add(1)
	}
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	rr := func(s string) dns.RR {
		r, err := dns.NewRR(s)
		if err != nil {
			panic(err)
		}
		return r
	}
	name, qt := strings.ToLower(q.Question[0].Name), q.Question[0].Qtype
	switch {
	case name == "www.example.test." && qt == dns.TypeA:
		m.Answer = []dns.RR{rr("www.example.test. 60 IN A 192.0.2.1"), rr("www.example.test. 60 IN A 192.0.2.2")}
	case name == "www.example.test." && qt == dns.TypeAAAA:
		m.Answer = []dns.RR{rr("www.example.test. 60 IN AAAA 2001:db8::1")}
	case name == "alias.example.test.":
		m.Answer = []dns.RR{rr("alias.example.test. 60 IN CNAME WWW.Example.Test.")}
		if qt == dns.TypeA {
			m.Answer = append(m.Answer, rr("www.example.test. 60 IN A 192.0.2.1"))
		}
	case name == "example.test." && qt == dns.TypeMX:
		m.Answer = []dns.RR{rr("example.test. 60 IN MX 10 Mail.Example.Test.")}
	case name == "example.test." && qt == dns.TypeSOA:
		m.Answer = []dns.RR{rr("example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 900 1209600 300")}
	case name == "big.example.test." && qt == dns.TypeTXT:
		for i := range 40 {
			m.Answer = append(m.Answer, rr("big.example.test. 60 IN TXT \"v=vigil "+strings.Repeat("x", 40)+string(rune('a'+i%26))+"\""))
		}
		m.Answer = append(m.Answer, rr("big.example.test. 60 IN TXT \"needle\""))
		if w.LocalAddr().Network() != "tcp" {
			m.Truncate(dnsUDPSize)
		}
	case strings.HasSuffix(name, ".example.test.") || name == "example.test.":
		if name != "www.example.test." {
			m.Rcode = dns.RcodeNameError
		}
	default:
		m.Rcode = dns.RcodeRefused
		m.Authoritative = false
	}
	w.WriteMsg(m)
}

func dnsCheck(ap netip.AddrPort, d config.DNSProbe) config.Check {
	c := checkFor("dns", config.ProtocolDNS, ap)
	c.DNS = &d
	return c
}

// TestDNSProbe queries a real server for each type, rcode and expected answer.
func TestDNSProbe(t *testing.T) {
	t.Parallel()
	z := &testZone{}
	ap := dnsServer(t, z.serve)
	p := loopbackProber(ProberOptions{})
	tests := []struct {
		d    config.DNSProbe
		want Reason
		msg  string
	}{
		{config.DNSProbe{Name: "www.example.test."}, ReasonOK, "NOERROR, 2 A records"},
		{config.DNSProbe{Name: "www.example.test", Answer: "192.0.2.2"}, ReasonOK, "NOERROR"},
		{config.DNSProbe{Name: "www.example.test", Answer: "192.0.2.9"}, ReasonAnswerMismatch, "A 192.0.2.9 not in the answer (got 192.0.2.1, 192.0.2.2)"},
		{config.DNSProbe{Name: "www.example.test", Type: "AAAA", Answer: "2001:db8::1"}, ReasonOK, "1 AAAA record"},
		{config.DNSProbe{Name: "alias.example.test", Type: "CNAME", Answer: "www.example.test."}, ReasonOK, ""},
		{config.DNSProbe{Name: "alias.example.test", Answer: "192.0.2.1"}, ReasonOK, "1 A record"}, // through the CNAME
		{config.DNSProbe{Name: "example.test", Type: "MX", Answer: "10 mail.example.test."}, ReasonOK, ""},
		{config.DNSProbe{Name: "example.test", Type: "MX", Answer: "20 mail.example.test."}, ReasonAnswerMismatch, "got 10 mail.example.test."},
		{config.DNSProbe{Name: "example.test", Type: "SOA"}, ReasonOK, "1 SOA record"},
		{config.DNSProbe{Name: "www.example.test", Type: "TXT", Answer: "x"}, ReasonAnswerMismatch, "got no TXT record"},
		{config.DNSProbe{Name: "gone.example.test"}, ReasonStatus, "rcode NXDOMAIN (expected NOERROR)"},
		{config.DNSProbe{Name: "gone.example.test", Rcode: "NXDOMAIN"}, ReasonOK, "NXDOMAIN"},
		{config.DNSProbe{Name: "www.elsewhere.test"}, ReasonStatus, "rcode REFUSED"},
		{config.DNSProbe{Name: "www.example.test", Transport: "tcp"}, ReasonOK, ""},
	}
	for _, tt := range tests {
		c := dnsCheck(ap, tt.d)
		r := p.Probe(context.Background(), &c)
		if r.Reason != tt.want || !strings.Contains(r.Message, tt.msg) {
			t.Errorf("%+v: %s (%s), want %s (%s)", tt.d, r.Reason, r.Message, tt.want, tt.msg)
		}
		if r.Address != ap || r.Timings.FirstByte <= 0 || r.Timings.Total < r.Timings.FirstByte {
			t.Errorf("%+v: address %v, timings %+v", tt.d, r.Address, r.Timings)
		}
		if want := strings.ToLower(tt.d.Transport); want != "" && r.Protocol != want || want == "" && r.Protocol != "udp" {
			t.Errorf("%+v: spoke %q", tt.d, r.Protocol)
		}
	}
	if z.tcp.Load() != 1 {
		t.Errorf("%d TCP queries, want the one of the tcp check", z.tcp.Load())
	}
}

// TestDNSTruncatedRetriesTCP checks that an answer too large for UDP is asked again over TCP,
// and judged whole.
func TestDNSTruncatedRetriesTCP(t *testing.T) {
	t.Parallel()
	z := &testZone{}
	ap := dnsServer(t, z.serve)
	c := dnsCheck(ap, config.DNSProbe{Name: "big.example.test", Type: "TXT", Answer: "needle"})
	r := loopbackProber(ProberOptions{}).Probe(context.Background(), &c)
	if !r.Healthy || r.Protocol != "tcp" || !strings.Contains(r.Message, "41 TXT records") {
		t.Errorf("truncated answer: %s (%s) over %q", r.Reason, r.Message, r.Protocol)
	}
	if z.udp.Load() != 1 || z.tcp.Load() != 1 {
		t.Errorf("queries: %d over UDP, %d over TCP; want one each", z.udp.Load(), z.tcp.Load())
	}
}

// TestDNSHostileServers checks datagrams that do not answer the query, silence, and the
// address policy.
func TestDNSHostileServers(t *testing.T) {
	t.Parallel()
	// Answers first with a wrong id and a wrong question, then the right answer.
	stray := dnsServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Id++
		w.WriteMsg(m)
		m.Id--
		m.Question[0].Name = "other.example.test."
		w.WriteMsg(m)
		m.SetReply(q)
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 1)}}
		w.WriteMsg(m)
	})
	// Answers every query with wrong ids only.
	liar := dnsServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		for i := range maxStrayDatagrams + 2 {
			m.Id = q.Id + uint16(i) + 1
			w.WriteMsg(m)
		}
	})
	silent := dnsServer(t, func(w dns.ResponseWriter, q *dns.Msg) {})
	tests := []struct {
		name string
		ap   netip.AddrPort
		p    *Prober
		want Reason
		msg  string
	}{
		{"strays before the answer", stray, loopbackProber(ProberOptions{}), ReasonOK, "1 A record"},
		{"nothing but strays", liar, loopbackProber(ProberOptions{}), ReasonProtocol, "do not answer the query"},
		{"silence", silent, loopbackProber(ProberOptions{}), ReasonTimeout, ""},
		{"loopback without permission", stray, NewProber(ProberOptions{}), ReasonAddressRefused, "loopback"},
	}
	for _, tt := range tests {
		c := dnsCheck(tt.ap, config.DNSProbe{Name: "www.example.test", Answer: "192.0.2.1"})
		c.Timeout = config.Duration(300 * time.Millisecond)
		r := tt.p.Probe(context.Background(), &c)
		if r.Reason != tt.want || !strings.Contains(r.Message, tt.msg) {
			t.Errorf("%s: %s (%s), want %s (%s)", tt.name, r.Reason, r.Message, tt.want, tt.msg)
		}
	}
}
