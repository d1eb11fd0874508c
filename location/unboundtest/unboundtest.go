// Package unboundtest runs Debian's unbound, a validating resolver, on a free loopback port
// for a test: the second opinion on DNSSEC answers. It is written apart from miekg/dns, and
// holds one zone's trust anchor and a stub zone that sends that zone's questions to a Vigil
// location. A test skips when unbound is not installed (Debian package unbound; .ci/run
// installs it).
package unboundtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/location/nsdtest"
)

// Binary returns the path of the unbound binary, or "" when it is not installed.
func Binary() string {
	if bin, err := exec.LookPath("unbound"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/unbound"); err == nil {
		return "/usr/sbin/unbound"
	}
	return ""
}

// Resolver is a running unbound.
type Resolver struct {
	// Addr is where it listens, UDP and TCP: "127.0.0.1:<port>".
	Addr string
}

// Start runs unbound, validating zone (absolute) with trust anchor ta (a DS or DNSKEY record
// in presentation form) and asking the server at loc ("host:port") for it. Cached answers
// live one second at most, so that a change of the location's answers (a failover) reaches
// its clients at once. Each of extra is one more line of unbound's server section (e.g.
// "tcp-upstream: yes"). It stops, and shows its log when the test failed, when the test ends.
func Start(t testing.TB, zone, loc, ta string, extra ...string) *Resolver {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("unbound is not installed (apt-get install -y unbound)")
	}
	port := nsdtest.FreePort(t)
	locHost, locPort, err := net.SplitHostPort(loc)
	if err != nil {
		t.Fatalf("unboundtest: location %q: %v", loc, err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "unbound.log")
	conf := fmt.Sprintf(`server:
	interface: 127.0.0.1@%d
	port: %d
	do-daemonize: no
	use-syslog: no
	logfile: %q
	verbosity: 1
	val-log-level: 2
	username: ""
	chroot: ""
	directory: %q
	pidfile: ""
	do-ip6: no
	do-not-query-localhost: no
	access-control: 127.0.0.0/8 allow
	module-config: "validator iterator"
	trust-anchor: %q
	local-zone: %q nodefault
	qname-minimisation: no
	cache-max-ttl: 1
	cache-max-negative-ttl: 1
	val-bogus-ttl: 1
	serve-expired: no
	prefetch: no
	edns-buffer-size: 1232
%sstub-zone:
	name: %q
	stub-addr: %s@%s
`, port, port, logPath, dir, strings.Join(strings.Fields(ta), " "), topLabel(zone), extraLines(extra), zone, locHost, locPort)
	path := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-d", "-c", path)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("unboundtest: start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("unbound log:\n%s", lastLines(string(b), 40))
			}
		}
	})
	r := &Resolver{Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := &dns.Client{Timeout: 500 * time.Millisecond}
		m := new(dns.Msg)
		m.SetQuestion(zone, dns.TypeSOA)
		if _, _, err := c.Exchange(m, r.Addr); err == nil {
			return r
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("unboundtest: unbound did not answer within 10s:\n%s", lastLines(string(b), 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// extraLines returns lines, each indented and ended, for the server section.
func extraLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\t" + l + "\n")
	}
	return b.String()
}

// topLabel returns the last label of zone with the root: "test." for "example.test.", the
// zone unbound serves locally by default (RFC 6761) unless told not to.
func topLabel(zone string) string {
	labels := dns.SplitDomainName(zone)
	if len(labels) == 0 {
		return "."
	}
	return labels[len(labels)-1] + "."
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Ask asks the resolver with the DO and AD bits and returns its response: over UDP, and
// again over TCP when that one is truncated, as a stub resolver does.
func (r *Resolver) Ask(t testing.TB, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.AuthenticatedData = true
	m.SetEdns0(4096, true)
	c := &dns.Client{Timeout: 3 * time.Second, UDPSize: 4096}
	var err error
	for range 3 {
		var resp *dns.Msg
		if resp, _, err = c.Exchange(m, r.Addr); err == nil && resp.Truncated {
			tcp := &dns.Client{Net: "tcp", Timeout: 3 * time.Second}
			resp, _, err = tcp.Exchange(m, r.Addr)
		}
		if err == nil {
			return resp
		}
	}
	t.Fatalf("unboundtest: ask %s %s: %v", name, dns.TypeToString[qtype], err)
	return nil
}

// Secure fails the test unless resp validated: NOERROR with the AD bit.
func Secure(t testing.TB, what string, resp *dns.Msg) {
	t.Helper()
	if resp.Rcode != dns.RcodeSuccess || !resp.AuthenticatedData {
		t.Fatalf("%s: not validated (rcode %s, ad %v):\n%v", what, dns.RcodeToString[resp.Rcode], resp.AuthenticatedData, resp)
	}
}

// Addrs returns the addresses of the answer's A and AAAA records.
func Addrs(resp *dns.Msg) []string {
	var out []string
	for _, rr := range resp.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		}
	}
	return out
}
