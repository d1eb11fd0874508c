package checker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
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
)

// errStray: the server sent nothing but datagrams that do not answer the query.
var errStray = fmt.Errorf("%d datagrams that do not answer the query (wrong id or question)", maxStrayDatagrams)

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
// if the check names an answer, the answer section holds a record of the type with that value.
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
	var values []string
	for _, rr := range resp.Answer {
		if rr.Header().Rrtype == qtype && rr.Header().Class == dns.ClassINET {
			values = append(values, answerValue(rr))
		}
	}
	if a := c.DNS.Answer; a != "" && !slices.Contains(values, a) {
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
// response that answers it: same id, same question; over UDP, datagrams that do not answer
// it (late or spoofed) are read past, up to maxStrayDatagrams.
func (p *Prober) queryDNS(ctx context.Context, c *config.Check, network string, port int, m *dns.Msg, res *Result) (*dns.Msg, error) {
	conn, err := p.dial(ctx, network, c.Target.Host, port, c.IPVersion, res)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := bindDeadline(ctx, conn)
	defer stop()
	co := &dns.Conn{Conn: conn, UDPSize: dnsUDPSize}
	if err := co.WriteMsg(m); err != nil {
		return nil, &phaseError{phaseWrite, err}
	}
	res.Protocol = network
	for range maxStrayDatagrams {
		r, err := co.ReadMsg()
		if res.Timings.FirstByte == 0 && (err == nil || !isTimeout(err)) {
			res.Timings.FirstByte = time.Since(res.Start)
		}
		if err != nil {
			return nil, &phaseError{phaseRead, err}
		}
		if r.Id == m.Id && len(r.Question) == 1 && r.Question[0].Qtype == m.Question[0].Qtype &&
			strings.EqualFold(r.Question[0].Name, m.Question[0].Name) {
			return r, nil
		}
		if network == "tcp" {
			break // a stream has no strays: it answered something else
		}
	}
	return nil, &phaseError{phaseRead, errStray}
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// answerValue writes rr's data as a record set's value is written in the configuration,
// canonical: addresses as netip writes them, names lower-case with the final dot.
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
		return strings.Join(v.Txt, "")
	}
	return strings.TrimPrefix(rr.String(), rr.Header().String())
}
