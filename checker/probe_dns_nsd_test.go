package checker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
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
`

// startNSD runs Debian's NSD (an authoritative server written apart from miekg/dns) on a
// free loopback port with nsdZone and a TXT set too large for a UDP answer, until the test
// ends. It skips the test when NSD is not installed.
func startNSD(t *testing.T) netip.AddrPort {
	t.Helper()
	bin, err := exec.LookPath("nsd")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/nsd"); err != nil {
			t.Skip("NSD is not installed (Debian: apt-get install nsd; .ci/run installs it)")
		}
		bin = "/usr/sbin/nsd"
	}
	dir := t.TempDir()
	var big strings.Builder
	for i := range 40 {
		fmt.Fprintf(&big, "big IN TXT \"%02d %s\"\n", i, strings.Repeat("t", 50))
	}
	big.WriteString("big IN TXT \"needle\"\n")
	if err := os.WriteFile(filepath.Join(dir, "example.test.zone"), []byte(nsdZone+big.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freeUDPAndTCPPort(t)
	conf := fmt.Sprintf(`server:
  ip-address: 127.0.0.1@%d
  username: ""
  chroot: ""
  zonesdir: %q
  zonelistfile: %q
  database: ""
  pidfile: %q
  xfrdfile: %q
  xfrdir: %q
  logfile: %q
  server-count: 1
  verbosity: 1
remote-control:
  control-enable: no
zone:
  name: example.test
  zonefile: example.test.zone
`, port, dir, filepath.Join(dir, "zone.list"), filepath.Join(dir, "nsd.pid"), filepath.Join(dir, "xfrd.state"), dir, filepath.Join(dir, "nsd.log"))
	confPath := filepath.Join(dir, "nsd.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-d", "-c", confPath)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	ap := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeSOA)
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "nsd.log"))
			t.Fatalf("nsd exited: %s %s", out.String(), log)
		default:
		}
		if r, _, err := (&dns.Client{Timeout: 200 * time.Millisecond}).Exchange(m, ap.String()); err == nil && r.Rcode == dns.RcodeSuccess {
			return ap
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "nsd.log"))
	t.Fatalf("nsd did not answer within 10s: %s %s", out.String(), log)
	return ap
}

// freeUDPAndTCPPort returns a loopback port free for both UDP and TCP at the time of asking.
func freeUDPAndTCPPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		pc.Close()
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no port free for both UDP and TCP in 20 tries")
	return 0
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
	}
	for _, tt := range tests {
		c := dnsCheck(ap, tt.d)
		r := p.Probe(context.Background(), &c)
		if r.Reason != tt.want || !strings.Contains(r.Message, tt.msg) || r.Protocol != tt.spoke {
			t.Errorf("%+v: %s (%s) over %q, want %s (%s) over %s", tt.d, r.Reason, r.Message, r.Protocol, tt.want, tt.msg, tt.spoke)
		}
	}
}
