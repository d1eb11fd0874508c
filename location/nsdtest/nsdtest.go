// Package nsdtest runs Debian's NSD on a free loopback port for the duration of a test: the
// second opinion the DNS tests compare against. NSD is an authoritative DNS server written
// apart from miekg/dns; the DNS probe tests and the location's differential test compare
// against it. A test skips when NSD is not installed (Debian package nsd; .ci/run installs
// it).
package nsdtest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vigil-dns/vigil/internal/testproc"
)

// Binary returns the path of the nsd binary, or "" when it is not installed.
func Binary() string {
	if bin, err := exec.LookPath("nsd"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/nsd"); err == nil {
		return "/usr/sbin/nsd"
	}
	return ""
}

// Start runs NSD serving zones (apex → zone file text, in the zone file format NSD reads) on
// 127.0.0.1 at a free port, UDP and TCP, and returns its address once it answers the SOA of
// every zone. NSD stops when the test ends. The test is skipped when NSD is not installed, and
// fails when NSD does not start within 10 seconds or refuses a zone file.
func Start(t testing.TB, zones map[string]string) netip.AddrPort {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("NSD is not installed (Debian: apt-get install nsd; .ci/run installs it)")
	}
	dir := t.TempDir()
	apexes := make([]string, 0, len(zones))
	for apex := range zones {
		apexes = append(apexes, dns.Fqdn(apex))
	}
	sort.Strings(apexes)
	port := FreePort(t)
	confPath := writeConf(t, dir, port, apexes, zones)
	out, exited := testproc.Start(t, exec.Command(bin, "-d", "-c", confPath))
	ap := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	fail := func(why string) {
		log, _ := os.ReadFile(filepath.Join(dir, "nsd.log"))
		t.Fatalf("nsd %s: %s %s", why, out.String(), log)
	}
	waitSOA(ap, apexes, exited, fail)
	return ap
}

// writeConf writes NSD's configuration in dir, for port and the zone files of apexes (the
// texts of zones), and returns its path.
func writeConf(t testing.TB, dir string, port int, apexes []string, zones map[string]string) string {
	t.Helper()
	var conf strings.Builder
	fmt.Fprintf(&conf, `server:
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
  minimal-responses: yes
remote-control:
  control-enable: no
`, port, dir, filepath.Join(dir, "zone.list"), filepath.Join(dir, "nsd.pid"), filepath.Join(dir, "xfrd.state"), dir, filepath.Join(dir, "nsd.log"))
	for i, apex := range apexes {
		file := fmt.Sprintf("zone%d.zone", i)
		text := zones[apex]
		if text == "" {
			text = zones[strings.TrimSuffix(apex, ".")]
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&conf, "zone:\n  name: %q\n  zonefile: %s\n", apex, file)
	}
	confPath := filepath.Join(dir, "nsd.conf")
	if err := os.WriteFile(confPath, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return confPath
}

// waitSOA waits until ap answers the SOA of every apex, calling fail (which must not return)
// when NSD exits or does not answer within 10 seconds.
func waitSOA(ap netip.AddrPort, apexes []string, exited <-chan struct{}, fail func(why string)) {
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	for _, apex := range apexes {
		m := new(dns.Msg)
		m.SetQuestion(apex, dns.TypeSOA)
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
			select {
			case <-exited:
				fail("exited")
			default:
			}
			if r, _, err := c.Exchange(m, ap.String()); err == nil && r.Rcode == dns.RcodeSuccess {
				break
			}
			if time.Since(start) > 10*time.Second {
				fail("did not answer the SOA of " + apex + " within 10s")
			}
		}
	}
}

// FreePort returns a loopback port free for both UDP and TCP at the time of asking.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = pc.Close()
		if err == nil {
			_ = ln.Close()
			return port
		}
	}
	t.Fatal("no port free for both UDP and TCP in 20 tries")
	return 0
}
