package checker

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
)

// The DNS part of the differential test: local servers that each answer a query in one way a
// real server may, probed by the prober (with its default dialer and with one whose
// connections are wrapped, as a simulated network's are) and by two references, miekg/dns's
// client and BIND's dig, whose messages are judged by the rules the README states: a
// response (QR set) with the query's id, answering the question when it repeats one, with the
// expected rcode, and holding a record of the type whose data is the check's answer, read
// by package rdata, the configuration's one parser of record data.

// dnsBehaviour is one way a DNS server may answer, and the check that probes it.
type dnsBehaviour struct {
	name    string
	answer  func(q *dns.Msg) []*dns.Msg // the datagrams (or TCP messages) sent for one query
	tcpOnly func(q *dns.Msg) []*dns.Msg // over TCP, when it answers otherwise there
	d       config.DNSProbe
}

// dnsVerdict is what one client made of a behaviour: healthy, and the kind of failure (ok,
// status, answer_mismatch or failed: no usable answer).
type dnsVerdict struct {
	healthy bool
	kind    string
	why     string
}

// rawDNSServer answers every query on a loopback UDP port and the same TCP port with the
// messages b gives, packed as they are (no checks, no compression).
func rawDNSServer(t *testing.T, b dnsBehaviour) netip.AddrPort {
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
	t.Cleanup(func() { pc.Close(); ln.Close() })
	pack := func(m *dns.Msg) []byte {
		out, err := m.Pack()
		if err != nil {
			panic(err)
		}
		return out
	}
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil {
				continue
			}
			for _, m := range b.answer(q) {
				pc.WriteTo(pack(m), from)
			}
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				buf := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				q := new(dns.Msg)
				if q.Unpack(buf) != nil {
					return
				}
				answer := b.answer
				if b.tcpOnly != nil {
					answer = b.tcpOnly
				}
				for _, m := range answer(q) {
					p := pack(m)
					c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(p))), p...))
				}
				io.Copy(io.Discard, c) // hold the connection until the client closes it
			}()
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// reply is an answer to q with rcode and the records written in zone-file form.
func reply(q *dns.Msg, rcode int, rrs ...string) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(q, rcode)
	m.Authoritative = true
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			panic(err)
		}
		m.Answer = append(m.Answer, rr)
	}
	return m
}

// bare is an error answer without a question section: QDCOUNT 0, the query's id, QR set.
func bare(rcode int) func(q *dns.Msg) []*dns.Msg {
	return func(q *dns.Msg) []*dns.Msg {
		m := new(dns.Msg)
		m.Id, m.Response, m.Opcode, m.Rcode = q.Id, true, q.Opcode, rcode
		return []*dns.Msg{m}
	}
}

func answering(rcode int, rrs ...string) func(q *dns.Msg) []*dns.Msg {
	return func(q *dns.Msg) []*dns.Msg { return []*dns.Msg{reply(q, rcode, rrs...)} }
}

func dnsBehaviours() []dnsBehaviour {
	const name = "svc.example.test."
	txt := func(data string) string { return name + " 60 IN TXT " + data }
	var bs []dnsBehaviour
	add := func(n string, answer func(q *dns.Msg) []*dns.Msg, d config.DNSProbe) {
		if d.Name == "" {
			d.Name = name
		}
		bs = append(bs, dnsBehaviour{name: n, answer: answer, d: d})
	}
	add("A with the answer", answering(dns.RcodeSuccess, name+" 60 IN A 192.0.2.1", name+" 60 IN A 192.0.2.2"), config.DNSProbe{Answer: "192.0.2.2"})
	add("A without the answer", answering(dns.RcodeSuccess, name+" 60 IN A 192.0.2.1"), config.DNSProbe{Answer: "192.0.2.9"})
	add("CNAME in upper case", answering(dns.RcodeSuccess, name+" 60 IN CNAME WWW.Example.TEST."), config.DNSProbe{Type: "CNAME", Answer: "www.example.test"})
	add("MX", answering(dns.RcodeSuccess, name+" 60 IN MX 10 Mail.example.test."), config.DNSProbe{Type: "MX", Answer: "10 mail.example.test."})
	add("NXDOMAIN expected", answering(dns.RcodeNameError), config.DNSProbe{Rcode: "NXDOMAIN"})
	add("NXDOMAIN unexpected", answering(dns.RcodeNameError), config.DNSProbe{})

	// TXT data: the check's answer is read by rdata, as a record set's value is.
	add("TXT UTF-8 unquoted", answering(dns.RcodeSuccess, txt(`"caf\195\169"`)), config.DNSProbe{Type: "TXT", Answer: "café"})
	add("TXT UTF-8 quoted with an escape", answering(dns.RcodeSuccess, txt(`"caf\195\169"`)), config.DNSProbe{Type: "TXT", Answer: `"caf\195\169"`})
	add("TXT quote and backslash", answering(dns.RcodeSuccess, txt(`"say \"hi\" \\o/"`)), config.DNSProbe{Type: "TXT", Answer: `"say \"hi\" \\o/"`})
	add("TXT of two strings, quoted", answering(dns.RcodeSuccess, txt(`"v=spf1 " "-all"`)), config.DNSProbe{Type: "TXT", Answer: `"v=spf1 " "-all"`})
	add("TXT of two strings, other split", answering(dns.RcodeSuccess, txt(`"v=spf1" " -all"`)), config.DNSProbe{Type: "TXT", Answer: `"v=spf1 " "-all"`})
	add("TXT of two strings, plain answer", answering(dns.RcodeSuccess, txt(`"v=spf1 " "-all"`)), config.DNSProbe{Type: "TXT", Answer: "v=spf1 -all"})
	add("TXT of 300 bytes, plain answer", answering(dns.RcodeSuccess, txt(`"`+strings.Repeat("k", 200)+`" "`+strings.Repeat("k", 100)+`"`)), config.DNSProbe{Type: "TXT", Answer: strings.Repeat("k", 300)})
	add("TXT plain with a space", answering(dns.RcodeSuccess, txt(`"hello world"`)), config.DNSProbe{Type: "TXT", Answer: "hello world"})
	add("TXT other value", answering(dns.RcodeSuccess, txt(`"hello"`)), config.DNSProbe{Type: "TXT", Answer: "goodbye"})

	// Error answers without a question section.
	add("REFUSED without a question, expected", bare(dns.RcodeRefused), config.DNSProbe{Rcode: "REFUSED"})
	add("REFUSED without a question", bare(dns.RcodeRefused), config.DNSProbe{})
	add("NOTIMP without a question", bare(dns.RcodeNotImplemented), config.DNSProbe{})
	add("FORMERR without a question", bare(dns.RcodeFormatError), config.DNSProbe{})
	add("SERVFAIL without a question, expected", bare(dns.RcodeServerFailure), config.DNSProbe{Rcode: "SERVFAIL"})

	// Messages that are not the answer.
	add("query echoed (QR=0)", func(q *dns.Msg) []*dns.Msg { return []*dns.Msg{q.Copy()} }, config.DNSProbe{})
	bs = append(bs, dnsBehaviour{name: "truncated over UDP, whole over TCP", answer: func(q *dns.Msg) []*dns.Msg {
		m := reply(q, dns.RcodeSuccess)
		m.Truncated = true
		return []*dns.Msg{m}
	}, tcpOnly: answering(dns.RcodeSuccess, name+" 60 IN A 192.0.2.1"), d: config.DNSProbe{Name: name, Answer: "192.0.2.1"}})
	add("A over TCP", answering(dns.RcodeSuccess, name+" 60 IN A 192.0.2.1"), config.DNSProbe{Answer: "192.0.2.1", Transport: "tcp"})
	return bs
}

// judgeDNS judges a reference client's message for q by the rules the README states.
func judgeDNS(d config.DNSProbe, q, r *dns.Msg) dnsVerdict {
	switch {
	case !r.Response:
		return dnsVerdict{kind: "failed", why: "QR=0: a query, not a response"}
	case r.Id != q.Id:
		return dnsVerdict{kind: "failed", why: "wrong id"}
	case len(r.Question) > 1,
		len(r.Question) == 1 && (r.Question[0].Qtype != q.Question[0].Qtype || !strings.EqualFold(r.Question[0].Name, q.Question[0].Name)),
		len(r.Question) == 0 && r.Rcode == dns.RcodeSuccess:
		return dnsVerdict{kind: "failed", why: "answers another question"}
	}
	want := dns.StringToRcode[rcodeName(&d)]
	if r.Rcode != want {
		return dnsVerdict{kind: "status", why: "rcode " + dns.RcodeToString[r.Rcode]}
	}
	if d.Answer == "" {
		return dnsVerdict{healthy: true, kind: "ok", why: dns.RcodeToString[r.Rcode]}
	}
	wantRR, err := rdata.Parse(q.Question[0].Name, q.Question[0].Qtype, 0, d.Answer)
	if err != nil {
		return dnsVerdict{kind: "failed", why: "answer: " + err.Error()}
	}
	// A plain TXT answer names bytes, not strings: compare the strings joined (miekg/dns
	// escapes byte by byte, so equal bytes join to equal text).
	plain := q.Question[0].Qtype == dns.TypeTXT && !strings.HasPrefix(d.Answer, `"`)
	for _, rr := range r.Answer {
		if t, ok := rr.(*dns.TXT); ok && plain && strings.Join(t.Txt, "") == strings.Join(wantRR.(*dns.TXT).Txt, "") {
			return dnsVerdict{healthy: true, kind: "ok", why: rr.String()}
		}
		wantRR.Header().Name = rr.Header().Name
		if !plain && dns.IsDuplicate(wantRR, rr) {
			return dnsVerdict{healthy: true, kind: "ok", why: rr.String()}
		}
	}
	return dnsVerdict{kind: "answer_mismatch", why: "no record " + wantRR.String()}
}

// dnsKind is the kind of failure of a prober's result.
func dnsKind(r Result) string {
	switch r.Reason {
	case ReasonOK, ReasonStatus, ReasonAnswerMismatch:
		return string(r.Reason)
	}
	return "failed"
}

// probeMiekg asks as the prober does with miekg/dns's client (over TCP again when the UDP
// answer is truncated) and judges the message.
func probeMiekg(ap netip.AddrPort, d config.DNSProbe, q *dns.Msg, timeout time.Duration) dnsVerdict {
	network := "udp"
	if d.Transport == "tcp" {
		network = "tcp"
	}
	cl := &dns.Client{Net: network, Timeout: timeout, UDPSize: dnsUDPSize}
	r, _, err := cl.Exchange(q, ap.String())
	if err == nil && r.Truncated && network == "udp" {
		cl.Net = "tcp"
		r, _, err = cl.Exchange(q, ap.String())
	}
	if err != nil {
		return dnsVerdict{kind: "failed", why: err.Error()}
	}
	return judgeDNS(d, q, r)
}

// probeDig asks with BIND's dig and judges the message it prints: its header line (opcode,
// status, id), its flags and its answer section.
func probeDig(dig string, ap netip.AddrPort, d config.DNSProbe, q *dns.Msg, timeout time.Duration) dnsVerdict {
	args := []string{"@" + ap.Addr().String(), "-p", strconv.Itoa(int(ap.Port())), "+tries=1", "+time=" + strconv.Itoa(int(max(timeout/time.Second, 1))),
		"+norecurse", "+bufsize=1232", "+nocookie", "+noall", "+comments", "+answer", "+question"}
	if d.Transport == "tcp" {
		args = append(args, "+tcp")
	}
	args = append(args, q.Question[0].Name, dns.TypeToString[q.Question[0].Qtype])
	out, err := exec.Command(dig, args...).CombinedOutput()
	text := string(out)
	if err != nil || !strings.Contains(text, "->>HEADER<<-") {
		return dnsVerdict{kind: "failed", why: "dig: " + strings.TrimSpace(text)}
	}
	r := new(dns.Msg)
	r.Id = q.Id // dig checks the id itself: what it prints answers its own query
	section := ""
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case strings.Contains(line, "->>HEADER<<-"):
			for f := range strings.SplitSeq(line, ",") {
				if k, v, ok := strings.Cut(strings.TrimSpace(f), ": "); ok && strings.HasSuffix(k, "status") {
					r.Rcode = dns.StringToRcode[v]
				}
			}
		case strings.HasPrefix(line, ";; flags:"):
			flags, _, _ := strings.Cut(strings.TrimPrefix(line, ";; flags:"), ";")
			r.Response = strings.Contains(" "+flags+" ", " qr ")
		case strings.HasPrefix(line, ";; QUESTION SECTION"):
			section = "question"
		case strings.HasPrefix(line, ";; ANSWER SECTION"):
			section = "answer"
		case strings.HasPrefix(line, ";"+q.Question[0].Name) && section == "question":
			r.Question = append(r.Question, q.Question[0])
		case line == "", strings.HasPrefix(line, ";"):
		case section == "answer":
			rr, err := dns.NewRR(line)
			if err != nil {
				return dnsVerdict{kind: "failed", why: "dig printed " + line + ": " + err.Error()}
			}
			r.Answer = append(r.Answer, rr)
		}
	}
	return judgeDNS(d, q, r)
}

// wrapConn hides the type of the connection it wraps, as a simulated network's do.
type wrapConn struct{ net.Conn }

// wrappingDialer dials as net.Dialer does and wraps every connection.
type wrappingDialer struct{ net.Dialer }

func (w *wrappingDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := w.Dialer.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return wrapConn{c}, nil
}

// testDifferentialDNS runs every DNS behaviour with the prober and the references.
func testDifferentialDNS(t *testing.T) {
	dig, digErr := exec.LookPath("dig")
	for _, b := range dnsBehaviours() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ap := rawDNSServer(t, b)
			c := checkFor("diff-dns", config.ProtocolDNS, ap)
			c.Timeout = config.Duration(2 * time.Second) // the references' too
			d := b.d
			c.DNS = &d
			if err := validateCheck(&c); err != nil {
				t.Fatal(err)
			}
			q, err := dnsQuery(&c)
			if err != nil {
				t.Fatal(err)
			}
			verdicts := map[string]dnsVerdict{"miekg/dns": probeMiekg(ap, *c.DNS, q, c.Timeout.Std())}
			if digErr == nil {
				verdicts["dig"] = probeDig(dig, ap, *c.DNS, q, c.Timeout.Std())
			}
			for name, opts := range map[string]ProberOptions{"prober": {}, "prober, wrapped connections": {Dialer: &wrappingDialer{}}} {
				r := loopbackProber(opts).Probe(context.Background(), &c)
				verdicts[name] = dnsVerdict{healthy: r.Healthy, kind: dnsKind(r), why: string(r.Reason) + ": " + r.Message}
			}
			ref := verdicts["miekg/dns"]
			for name, v := range verdicts {
				if v.healthy != ref.healthy || v.kind != ref.kind {
					t.Errorf("%s: healthy=%v %s (%s); miekg/dns: healthy=%v %s (%s)", name, v.healthy, v.kind, v.why, ref.healthy, ref.kind, ref.why)
				} else {
					t.Logf("%s: healthy=%v %s (%s)", name, v.healthy, v.kind, v.why)
				}
			}
		})
	}
	if digErr != nil {
		t.Logf("dig not installed (bind9-dnsutils): compared with miekg/dns alone")
	}
}
