package location

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
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// unbound is Debian's validating resolver running as a real process on loopback, with
// example.test's trust anchor and a stub zone that sends its questions to one location.
type unbound struct {
	addr string
}

// startUnbound runs unbound with trust anchor ta (a DS or DNSKEY record in presentation form)
// for example.test., asking the location at loc. It stops when the test ends.
func startUnbound(t *testing.T, loc string, ta string) *unbound {
	t.Helper()
	bin, err := exec.LookPath("unbound")
	if err != nil {
		bin = "/usr/sbin/unbound"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("unbound is not installed (apt-get install -y unbound)")
		}
	}
	port := freeUDPPort(t)
	locHost, locPort, _ := net.SplitHostPort(loc)
	dir := t.TempDir()
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
	local-zone: "test." nodefault
	qname-minimisation: no
	cache-max-ttl: 1
	cache-max-negative-ttl: 1
	val-bogus-ttl: 1
	serve-expired: no
	prefetch: no
	edns-buffer-size: 1232
stub-zone:
	name: "example.test."
	stub-addr: %s@%s
`, port, port, filepath.Join(dir, "unbound.log"), dir, ta, locHost, locPort)
	path := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-d", "-c", path)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("unbound: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "unbound.log")); err == nil {
				t.Logf("unbound log:\n%s", lastLines(string(b), 40))
			}
		}
	})
	u := &unbound{addr: fmt.Sprintf("127.0.0.1:%d", port)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := &dns.Client{Timeout: 500 * time.Millisecond}
		m := new(dns.Msg)
		m.SetQuestion("example.test.", dns.TypeSOA)
		if _, _, err := c.Exchange(m, u.addr); err == nil {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("unbound did not answer within 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// freeUDPPort returns a UDP port of 127.0.0.1 free a moment ago whose TCP port is free too.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		pc.Close()
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// ask asks unbound with the DO and AD bits and returns its response.
func (u *unbound) ask(t *testing.T, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.AuthenticatedData = true
	m.SetEdns0(4096, true)
	c := &dns.Client{Timeout: 3 * time.Second, UDPSize: 4096}
	var err error
	for range 3 {
		var r *dns.Msg
		if r, _, err = c.Exchange(m, u.addr); err == nil {
			return r
		}
	}
	t.Fatalf("ask unbound %s %s: %v", name, dns.TypeToString[qtype], err)
	return nil
}

// secure fails the test unless r validated: NOERROR and the AD bit.
func secure(t *testing.T, what string, r *dns.Msg) {
	t.Helper()
	if r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData {
		t.Fatalf("%s: not validated (rcode %s, ad %v):\n%v", what, dns.RcodeToString[r.Rcode], r.AuthenticatedData, r)
	}
}

// unboundZone is the signed demo zone unbound validates: TTLs of one second so that a
// failover reaches it at once.
func unboundZone() config.Zone {
	z := config.DefaultZone()
	z.Name = "example.test."
	z.TTL = 1
	z.SOA.TTL, z.SOA.Minimum = 1, 1
	z.NameServers = []string{"ns1.example.test."}
	long := strings.Repeat("y", 250)
	var big []config.Record
	for i := range 8 {
		big = append(big, config.Record{Value: long + string(rune('a'+i))})
	}
	z.RecordSets = []config.RecordSet{
		{Name: "ns1", Type: config.TypeA, Records: []config.Record{{Value: "127.0.0.1"}}},
		{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.1"}}},
		{Name: "fo", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
			{Value: "192.0.2.10", HealthCheck: "p", Role: config.RolePrimary},
			{Value: "192.0.2.11", HealthCheck: "s", Role: config.RoleSecondary}}},
		{Name: "*.wild", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.99"}}},
		{Name: "alias", Type: config.TypeCNAME, Records: []config.Record{{Value: "fo.example.test."}}},
		{Name: "big", Type: config.TypeTXT, Records: big},
	}
	return z
}

// Debian's unbound, a validating resolver, trusts example.test by its DS alone and validates
// what one location answers: records, a failover as it happens, a CNAME, a wildcard, a name
// that does not exist, a type a name lacks, the DNSKEY set, and an answer too large for UDP
// (fetched over TCP); then a ZSK rollover with unbound asking all through it, and not one
// answer bogus.
func TestUnboundValidatesSignedZone(t *testing.T) {
	s := startServer(t, Config{})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{unboundZone()}, nil))
	sealer, err := dnssec.NewSealer([]byte("unbound-test-seal-secret-0000000"))
	if err != nil {
		t.Fatal(err)
	}
	zk, err := dnssec.InitialKeys("example.test.", dnssec.SchemeSplit, sealer, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	install := func(zk *dnssec.ZoneKeys) {
		sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{DNSKEYTTL: 1})
		if err != nil {
			t.Fatal(err)
		}
		s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})
	}
	install(zk)
	ds := zk.Keys[0].DS("example.test.", 3600)
	u := startUnbound(t, s.Addr().String(), strings.Join(strings.Fields(ds.String()), " "))

	r := u.ask(t, "www.example.test.", dns.TypeA)
	secure(t, "www A", r)
	if v := addrs(r); len(v) != 1 || v[0] != "192.0.2.1" {
		t.Fatalf("www A: %v", v)
	}
	secure(t, "DNSKEY", u.ask(t, "example.test.", dns.TypeDNSKEY))
	secure(t, "wildcard", u.ask(t, "a.wild.example.test.", dns.TypeA))
	r = u.ask(t, "alias.example.test.", dns.TypeA)
	secure(t, "CNAME to the failover set", r)
	r = u.ask(t, "nothing.example.test.", dns.TypeA)
	secure(t, "missing name (black lie)", r)
	if len(r.Answer) != 0 {
		t.Fatalf("missing name answered: %v", r)
	}
	r = u.ask(t, "www.example.test.", dns.TypeAAAA)
	secure(t, "missing type", r)
	if len(r.Answer) != 0 {
		t.Fatalf("missing type answered: %v", r)
	}
	r = u.ask(t, "big.example.test.", dns.TypeTXT)
	secure(t, "large answer", r)
	if len(r.Answer) < 8 {
		t.Fatalf("large answer: %d records", len(r.Answer))
	}

	failover := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := u.ask(t, "fo.example.test.", dns.TypeA)
			secure(t, "fo A", r)
			if v := addrs(r); len(v) == 1 && v[0] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("fo A: %v, want %s within 10s", addrs(r), want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	failover("192.0.2.10")
	s.SetVerdicts(map[string]bool{"p": false})
	failover("192.0.2.11")
	s.SetVerdicts(map[string]bool{"p": true})
	failover("192.0.2.10")

	// A ZSK rollover, asked through from start to end: the new ZSK is published first,
	// signs after the DNSKEY TTL and the margin, and the old one leaves after the largest TTL.
	now := time.Now().Unix()
	next, err := dnssec.Rollover(zk, dnssec.RoleZSK, sealer, now, dnssec.Timing{DNSKEYTTL: 1, MaxTTL: 1, Margin: 1})
	if err != nil {
		t.Fatal(err)
	}
	install(next)
	oldTag, newTag := zk.Keys[1].Tag, next.Keys[2].Tag
	seen := map[uint16]bool{}
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		r := u.ask(t, "www.example.test.", dns.TypeA)
		secure(t, "www A during the rollover", r)
		secure(t, "DNSKEY during the rollover", u.ask(t, "example.test.", dns.TypeDNSKEY))
		for _, rr := range exchange(t, "udp", s.Addr(), doQuery("www.example.test.", dns.TypeA, 1232)).Answer {
			if sig, ok := rr.(*dns.RRSIG); ok {
				seen[sig.KeyTag] = true
			}
		}
	}
	if !seen[oldTag] || !seen[newTag] {
		t.Fatalf("the rollover did not go from key %d to key %d: signers seen %v", oldTag, newTag, seen)
	}
}

// addrs returns the addresses of the answer's A records.
func addrs(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out
}
