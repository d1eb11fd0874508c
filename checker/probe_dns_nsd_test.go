package checker

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/nsdtest"
)

// nsdZone is the zone NSD serves in TestDNSProbeAgainstNSD.
const nsdZone = `$ORIGIN example.test.
$TTL 60
@     IN SOA ns1 hostmaster 1 7200 900 1209600 300
@     IN NS  ns1
@     IN MX  10 mail
ns1   IN A   192.0.2.53
www   IN A   192.0.2.1
www   IN A   192.0.2.2
www   IN AAAA 2001:db8::1
alias IN CNAME www
cafe  IN TXT "caf\195\169"
spf   IN TXT "v=spf1 " "-all"
quote IN TXT "say \"hi\" \\o/"
`

// startNSD runs Debian's NSD (an authoritative server written apart from miekg/dns) on a
// free loopback port with nsdZone and a TXT set too large for a UDP answer, until the test
// ends. It skips the test when NSD is not installed.
func startNSD(t *testing.T) netip.AddrPort {
	t.Helper()
	var big strings.Builder
	for i := range 40 {
		fmt.Fprintf(&big, "big IN TXT \"%02d %s\"\n", i, strings.Repeat("t", 50))
	}
	big.WriteString("big IN TXT \"needle\"\n")
	return nsdtest.Start(t, map[string]string{"example.test.": nsdZone + big.String()})
}

// TestDNSProbeAgainstNSD probes a real authoritative server other than miekg/dns: answers,
// a CNAME chain, rcodes, a zone it does not serve, and an answer too large for UDP.
func TestDNSProbeAgainstNSD(t *testing.T) {
	t.Parallel()
	ap := startNSD(t)
	p := loopbackProber(ProberOptions{})
	tests := []struct {
		d     config.DNSProbe
		want  Reason
		msg   string
		spoke string
	}{
		{config.DNSProbe{Name: "www.example.test", Answer: "192.0.2.2"}, ReasonOK, "NOERROR, 2 A records", "udp"},
		{config.DNSProbe{Name: "www.example.test", Type: "AAAA", Answer: "2001:db8::1"}, ReasonOK, "1 AAAA record", "udp"},
		{config.DNSProbe{Name: "alias.example.test", Answer: "192.0.2.1"}, ReasonOK, "2 A records", "udp"},
		{config.DNSProbe{Name: "alias.example.test", Type: "CNAME", Answer: "www.example.test."}, ReasonOK, "", "udp"},
		{config.DNSProbe{Name: "example.test", Type: "MX", Answer: "10 mail.example.test."}, ReasonOK, "", "udp"},
		{config.DNSProbe{Name: "example.test", Type: "SOA"}, ReasonOK, "1 SOA record", "udp"},
		{config.DNSProbe{Name: "www.example.test", Answer: "192.0.2.9"}, ReasonAnswerMismatch, "not in the answer", "udp"},
		{config.DNSProbe{Name: "gone.example.test", Rcode: "NXDOMAIN"}, ReasonOK, "NXDOMAIN", "udp"},
		{config.DNSProbe{Name: "gone.example.test"}, ReasonStatus, "rcode NXDOMAIN (expected NOERROR)", "udp"},
		{config.DNSProbe{Name: "www.elsewhere.test"}, ReasonStatus, "rcode REFUSED", "udp"},
		{config.DNSProbe{Name: "big.example.test", Type: "TXT", Answer: "needle"}, ReasonOK, "41 TXT records", "tcp"},
		{config.DNSProbe{Name: "www.example.test", Transport: "tcp"}, ReasonOK, "2 A records", "tcp"},
		// TXT data compared as data, the answer read as the configuration reads a value.
		{config.DNSProbe{Name: "cafe.example.test", Type: "TXT", Answer: "café"}, ReasonOK, "1 TXT record", "udp"},
		{config.DNSProbe{Name: "cafe.example.test", Type: "TXT", Answer: `"caf\195\169"`}, ReasonOK, "1 TXT record", "udp"},
		{config.DNSProbe{Name: "cafe.example.test", Type: "TXT", Answer: "cafe"}, ReasonAnswerMismatch, `(got "caf\195\169")`, "udp"},
		{config.DNSProbe{Name: "spf.example.test", Type: "TXT", Answer: `"v=spf1 " "-all"`}, ReasonOK, "", "udp"},
		{config.DNSProbe{Name: "spf.example.test", Type: "TXT", Answer: "v=spf1 -all"}, ReasonOK, "", "udp"},
		{config.DNSProbe{Name: "spf.example.test", Type: "TXT", Answer: `"v=spf1 -all"`}, ReasonAnswerMismatch, "", "udp"},
		{config.DNSProbe{Name: "quote.example.test", Type: "TXT", Answer: `say "hi" \o/`}, ReasonOK, "", "udp"},
		{config.DNSProbe{Name: "quote.example.test", Type: "TXT", Answer: `"say \"hi\" \\o/"`}, ReasonOK, "", "udp"},
	}
	for _, tt := range tests {
		c := dnsCheck(ap, tt.d)
		r := p.Probe(context.Background(), &c)
		if r.Reason != tt.want || !strings.Contains(r.Message, tt.msg) || r.Protocol != tt.spoke {
			t.Errorf("%+v: %s (%s) over %q, want %s (%s) over %s", tt.d, r.Reason, r.Message, r.Protocol, tt.want, tt.msg, tt.spoke)
		}
	}
}
