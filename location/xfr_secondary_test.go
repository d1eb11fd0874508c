package location

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/location/nsdtest"

	"github.com/vigil-dns/vigil/internal/testproc"

	"github.com/vigil-dns/vigil/internal/syncbuf"
)

// A secondary name server (NSD or Knot) that transfers zones from a location, on a free
// loopback port, with its own configuration and state in a temporary directory; it stops
// when the test ends.
type secondary struct {
	name string
	addr netip.AddrPort
	dir  string
	out  *syncbuf.Buffer
}

// startNSDSecondary starts NSD on port as a secondary of the zones apexes, transferring from primary
// with the test's TSIG key, and accepting NOTIFY from it. The test is skipped without NSD.
func startNSDSecondary(t testing.TB, port int, primary netip.AddrPort, apexes []string) *secondary {
	t.Helper()
	bin := nsdtest.Binary()
	if bin == "" {
		t.Skip("NSD is not installed (Debian: apt-get install nsd; .ci/run installs it)")
	}
	dir := t.TempDir()
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
  verbosity: 2
  minimal-responses: yes
  xfrd-reload-timeout: 0
remote-control:
  control-enable: no
key:
  name: %q
  algorithm: hmac-sha256
  secret: %q
`, port, dir, filepath.Join(dir, "zone.list"), filepath.Join(dir, "nsd.pid"), filepath.Join(dir, "xfrd.state"), dir,
		filepath.Join(dir, "nsd.log"), xfrKeyName, xfrKeySecret)
	for i, apex := range apexes {
		fmt.Fprintf(&conf, "zone:\n  name: %q\n  zonefile: zone%d.zone\n  allow-notify: 127.0.0.1 %s\n  request-xfr: %s@%d %s\n",
			apex, i, xfrKeyName, primary.Addr(), primary.Port(), xfrKeyName)
	}
	path := filepath.Join(dir, "nsd.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sec := &secondary{name: "nsd", addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), dir: dir}
	sec.start(t, bin, "-d", "-c", path)
	sec.waitZones(t, apexes, func() string { b, _ := os.ReadFile(filepath.Join(dir, "nsd.log")); return string(b) })
	return sec
}

// startKnotSecondary starts Knot (knotd) as a secondary of the zones apexes, as
// startNSDSecondary starts NSD. The test is skipped without knotd.
func startKnotSecondary(t testing.TB, port int, primary netip.AddrPort, apexes []string) *secondary {
	t.Helper()
	bin, err := exec.LookPath("knotd")
	if err != nil {
		t.Skip("Knot is not installed (Debian: apt-get install knot; .ci/run installs it)")
	}
	dir := t.TempDir()
	var conf strings.Builder
	fmt.Fprintf(&conf, `server:
    rundir: %q
    listen: 127.0.0.1@%d
    background-workers: 1
    tcp-workers: 1
    udp-workers: 1
database:
    storage: %q
log:
  - target: stderr
    any: info
key:
  - id: %s
    algorithm: hmac-sha256
    secret: %s
remote:
  - id: vigil
    address: %s@%d
    key: %s
acl:
  - id: notify_from_vigil
    address: 127.0.0.1
    key: %s
    action: notify
template:
  - id: default
    storage: %q
    zonefile-sync: -1
    zonefile-load: none
    journal-content: none
    semantic-checks: off
    master: vigil
    acl: notify_from_vigil
zone:
`, dir, port, dir, xfrKeyName, xfrKeySecret, primary.Addr(), primary.Port(), xfrKeyName, xfrKeyName, dir)
	for _, apex := range apexes {
		fmt.Fprintf(&conf, "  - domain: %s\n", apex)
	}
	path := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sec := &secondary{name: "knot", addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), dir: dir}
	sec.start(t, bin, "-c", path)
	sec.waitZones(t, apexes, func() string { return "" })
	return sec
}

// log returns the secondary's log file (NSD's; Knot logs to its output, sec.out).
func (sec *secondary) log() string {
	b, _ := os.ReadFile(filepath.Join(sec.dir, "nsd.log"))
	return string(b)
}

// start runs bin with args until the test ends.
func (sec *secondary) start(t testing.TB, bin string, args ...string) {
	t.Helper()
	sec.out, _ = testproc.Start(t, exec.Command(bin, args...))
}

// waitZones waits until the secondary answers the SOA of every apex (it has transferred them),
// failing the test after 15 seconds with the secondary's output and log.
func (sec *secondary) waitZones(t testing.TB, apexes []string, log func() string) {
	t.Helper()
	c := &dns.Client{Timeout: 300 * time.Millisecond}
	for _, apex := range apexes {
		m := new(dns.Msg)
		m.SetQuestion(apex, dns.TypeSOA)
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			if r, _, err := c.Exchange(m, sec.addr.String()); err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
				break
			}
			if time.Since(start) > 15*time.Second {
				t.Fatalf("%s did not transfer %s within 15s:\n%s\n%s", sec.name, apex, sec.out.String(), log())
			}
		}
	}
}

// askAt asks the secondary (or any server at addr) one question over UDP.
func askAt(t testing.TB, addr netip.AddrPort, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Timeout: time.Second}
	var err error
	for range 3 {
		var r *dns.Msg
		if r, _, err = c.Exchange(m, addr.String()); err == nil && r.Truncated {
			// As a resolver does: a truncated answer (a large one, or NSD's rate limit
			// slipping a TC=1 answer to a client that asks hundreds of questions at once)
			// is asked again over TCP.
			tcp := &dns.Client{Net: "tcp", Timeout: time.Second}
			r, _, err = tcp.Exchange(m, addr.String())
		}
		if err == nil {
			return r
		}
	}
	t.Fatalf("ask %s %s %s: %v", addr, name, dns.TypeToString[qtype], err)
	return nil
}
