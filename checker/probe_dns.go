package checker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
)

// Limits of a DNS probe.
const (
	// dnsUDPSize is the EDNS0 buffer size a probe advertises: the size DNS Flag Day 2020
	// settled on, which avoids fragmentation.
	dnsUDPSize = 1232
	// maxStrayDatagrams is how many datagrams that do not answer the query a UDP probe
	// reads past before it gives up.
	maxStrayDatagrams = 8
	// maxListedAnswers is how many answer values a mismatch message lists.
	maxListedAnswers = 8
	// maxDNSDatagram is the largest UDP answer read: a server that ignores the size a probe
	// advertises still gets room for a few times as much.
	maxDNSDatagram = 4096
)

// errStray: the server sent nothing but datagrams that do not answer the query.
var errStray = fmt.Errorf("%d datagrams that do not answer the query (not a response, or wrong id or question)", maxStrayDatagrams)

// dnsQuery returns the query c's dns settings describe, or why there is none. Empty fields
// count as their defaults, as in config.
func dnsQuery(c *config.Check) (*dns.Msg, error) {
	d := c.DNS
	if d == nil || d.Name == "" {
		return nil, errors.New("dns check without a name to query")
	}
	if _, ok := dns.IsDomainName(d.Name); !ok {
		return nil, fmt.Errorf("invalid name %q", d.Name)
	}
	typ := strings.ToUpper(string(d.Type))
	if typ == "" {
		typ = string(config.TypeA)
	}
	qtype, ok := dns.StringToType[typ]
	if !ok {
		return nil, fmt.Errorf("invalid query type %q", d.Type)
	}
	if _, ok := dns.StringToRcode[rcodeName(d)]; !ok {
		return nil, fmt.Errorf("invalid rcode %q", d.Rcode)
	}
	if t := strings.ToLower(d.Transport); t != "" && t != "udp" && t != "tcp" {
		return nil, fmt.Errorf("invalid transport %q", d.Transport)
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(d.Name), qtype)
	m.RecursionDesired = d.Recursion
	m.SetEdns0(dnsUDPSize, false)
	return m, nil
}

// rcodeName is the rcode d expects, NOERROR by default.
func rcodeName(d *config.DNSProbe) string {
	if d.Rcode == "" {
		return "NOERROR"
	}
	return strings.ToUpper(d.Rcode)
}

// probeDNS asks the target the check's question, over UDP unless it says TCP (and over TCP
// again when the UDP answer is truncated). Healthy when the rcode is the expected one and,
// if the check names an answer, the answer section holds a record of the type with that
// data (answerMatch).
func (p *Prober) probeDNS(ctx context.Context, c *config.Check, res *Result) {
	m, err := dnsQuery(c)
	if err != nil {
		res.fail(ReasonError, "checker: "+err.Error())
		return
	}
	port := c.Target.Port
	if port == 0 {
		port = 53
	}
	network := "udp"
	if strings.EqualFold(c.DNS.Transport, "tcp") {
		network = "tcp"
	}
	resp, err := p.queryDNS(ctx, c, network, port, m, res)
	if err == nil && resp.Truncated && network == "udp" {
		resp, err = p.queryDNS(ctx, c, "tcp", port, m, res)
	}
	if err != nil {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
		}
		res.fail(classify(err))
		return
	}
	want := dns.StringToRcode[rcodeName(c.DNS)]
	if resp.Rcode != want {
		res.fail(ReasonStatus, fmt.Sprintf("rcode %s (expected %s)", dns.RcodeToString[resp.Rcode], dns.RcodeToString[want]))
		return
	}
	qtype := m.Question[0].Qtype
	match := answerMatch(qtype, c.DNS.Answer)
	var values []string
	found := false
	for _, rr := range resp.Answer {
		if rr.Header().Rrtype == qtype && rr.Header().Class == dns.ClassINET {
			values = append(values, answerValue(rr))
			found = found || match(rr)
		}
	}
	if a := c.DNS.Answer; a != "" && !found {
		got := "no " + dns.TypeToString[qtype] + " record"
		if len(values) > 0 {
			got = strings.Join(values[:min(len(values), maxListedAnswers)], ", ")
			if len(values) > maxListedAnswers {
				got += fmt.Sprintf(" and %d more", len(values)-maxListedAnswers)
			}
		}
		res.fail(ReasonAnswerMismatch, fmt.Sprintf("%s %s not in the answer (got %s)", dns.TypeToString[qtype], a, got))
		return
	}
	res.Healthy, res.Reason = true, ReasonOK
	res.Message = dns.RcodeToString[resp.Rcode] + ", " + strconv.Itoa(len(values)) + " " + dns.TypeToString[qtype] + " record"
	if len(values) != 1 {
		res.Message += "s"
	}
}

// queryDNS sends m to the target over network on a fresh connection and returns the
// response that answers it (answers). Over UDP, datagrams that do not (late, spoofed, or an
// echo of the query) are read past, up to maxStrayDatagrams. The framing follows network,
// not the connection's type: a Dialer may wrap the connections it returns.
func (p *Prober) queryDNS(ctx context.Context, c *config.Check, network string, port int, m *dns.Msg, res *Result) (*dns.Msg, error) {
	query, err := m.Pack()
	if err != nil {
		return nil, &phaseError{phaseWrite, err}
	}
	conn, err := p.dial(ctx, network, c.Target.Host, port, c.IPVersion, res)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := bindDeadline(ctx, conn)
	defer stop()
	if network == "tcp" {
		query = append(binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(query)), uint16(len(query))), query...)
	}
	if _, err := conn.Write(query); err != nil {
		return nil, &phaseError{phaseWrite, err}
	}
	res.Protocol = network
	var buf []byte
	for range maxStrayDatagrams {
		var raw []byte
		raw, buf, err = readDNS(conn, network, buf)
		if res.Timings.FirstByte == 0 && (err == nil || !isTimeout(err)) {
			res.Timings.FirstByte = time.Since(res.Start)
		}
		if err != nil {
			return nil, &phaseError{phaseRead, err}
		}
		r := new(dns.Msg)
		if err := r.Unpack(raw); err != nil {
			return nil, &phaseError{phaseRead, fmt.Errorf("malformed DNS message: %w", err)}
		}
		if answers(m, r) {
			return r, nil
		}
		if network == "tcp" {
			break // a stream has no strays: it answered something else
		}
	}
	return nil, &phaseError{phaseRead, errStray}
}

// readDNS reads one DNS message from conn: a datagram over UDP, a message with its two-byte
// length over TCP. buf is reused when large enough; the message and the buffer are returned.
func readDNS(conn net.Conn, network string, buf []byte) ([]byte, []byte, error) {
	if network == "tcp" {
		var l [2]byte
		if _, err := io.ReadFull(conn, l[:]); err != nil {
			return nil, buf, err
		}
		n := int(binary.BigEndian.Uint16(l[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		_, err := io.ReadFull(conn, buf[:n])
		return buf[:n], buf, err
	}
	if buf == nil {
		buf = make([]byte, maxDNSDatagram)
	}
	n, err := conn.Read(buf[:maxDNSDatagram])
	return buf[:n], buf, err
}

// answers reports whether r answers query q: a response (QR set) with q's id that repeats
// q's question, or an error answer (an rcode other than NOERROR) without a question
// section, which RFC 1035 allows (a server that refuses or cannot parse a query may not
// echo it).
func answers(q, r *dns.Msg) bool {
	if !r.Response || r.Id != q.Id {
		return false
	}
	switch len(r.Question) {
	case 0:
		return r.Rcode != dns.RcodeSuccess
	case 1:
		return r.Question[0].Qtype == q.Question[0].Qtype && strings.EqualFold(r.Question[0].Name, q.Question[0].Name)
	}
	return false
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// answerMatch returns the test of a record against a check's answer, written as a record
// set's value is: equal data, read by package rdata as every value of the configuration is,
// compared in wire form with domain names lower-cased. A TXT answer in quoted strings
// ("v=spf1 " "-all") names the record's strings; one written plain names their bytes, however
// the record splits them. An answer rdata cannot read (configuration validation refuses
// those) matches no record.
func answerMatch(qtype uint16, answer string) func(dns.RR) bool {
	if answer == "" {
		return func(dns.RR) bool { return true }
	}
	if qtype == dns.TypeTXT && !strings.HasPrefix(answer, `"`) {
		return func(rr dns.RR) bool {
			w, ok := wireData(rr)
			return ok && txtBytes(w) == answer
		}
	}
	key, err := rdata.Key(qtype, answer)
	if err != nil {
		return func(dns.RR) bool { return false }
	}
	return func(rr dns.RR) bool {
		w, ok := wireData(rr)
		return ok && w == key
	}
}

// wireData returns rr's data in wire form, domain names lower-cased, as rdata.Key writes a
// value's: two records with equal wire data hold the same data.
func wireData(rr dns.RR) (string, bool) {
	rr = dns.Copy(rr)
	h := rr.Header()
	h.Name, h.Ttl = ".", 0
	switch v := rr.(type) {
	case *dns.CNAME:
		v.Target = rdata.Lower(v.Target)
	case *dns.NS:
		v.Ns = rdata.Lower(v.Ns)
	case *dns.PTR:
		v.Ptr = rdata.Lower(v.Ptr)
	case *dns.MX:
		v.Mx = rdata.Lower(v.Mx)
	case *dns.SRV:
		v.Target = rdata.Lower(v.Target)
	}
	buf := make([]byte, dns.Len(rr)+1)
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	const header = 1 + 10 // the root owner name, type, class, TTL and length
	if err != nil || n < header {
		return "", false
	}
	return string(buf[header:n]), true
}

// txtBytes returns the bytes of a TXT record's character strings, joined, from its wire data.
func txtBytes(w string) string {
	var b strings.Builder
	for len(w) > 0 {
		n := min(int(w[0]), len(w)-1)
		b.WriteString(w[1 : 1+n])
		w = w[1+n:]
	}
	return b.String()
}

// answerValue writes rr's data for a message, as a record set's value is written in the
// configuration: addresses as netip writes them, names lower-case with the final dot, a TXT
// record as its quoted strings (miekg/dns keeps them with the escapes a quoted value takes).
func answerValue(rr dns.RR) string {
	switch v := rr.(type) {
	case *dns.A:
		if a, ok := netip.AddrFromSlice(v.A); ok {
			return a.Unmap().String()
		}
	case *dns.AAAA:
		if a, ok := netip.AddrFromSlice(v.AAAA); ok {
			return a.String()
		}
	case *dns.CNAME:
		return strings.ToLower(v.Target)
	case *dns.NS:
		return strings.ToLower(v.Ns)
	case *dns.MX:
		return strconv.Itoa(int(v.Preference)) + " " + strings.ToLower(v.Mx)
	case *dns.TXT:
		return `"` + strings.Join(v.Txt, `" "`) + `"`
	}
	return strings.TrimPrefix(rr.String(), rr.Header().String())
}
