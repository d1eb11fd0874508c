package location

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// A huge zone's transfers to clients that stop reading are bounded in number and in time:
// with 3 transfers at once and 2 per client network, two stalled clients of 127.0.0.0/24
// hold their network's slots (a third of that network is REFUSED) and a stalled client of
// 127.0.1.0/24 the last slot (a client of a fourth network is REFUSED); each stalled transfer
// ends at TransferConfig.Timeout, counted aborted, its slot free again. The zone is larger
// than the kernel's socket buffers can hold, so that the stalled transfers block.
func TestTransferStalledClientsBounded(t *testing.T) {
	const apex = "huge.test."
	const timeout = 500 * time.Millisecond
	z := config.DefaultZone()
	z.Name = apex
	z.NameServers = []string{"ns1.huge.test."}
	text := `"` + strings.Repeat("x", 250) + `"`
	for i := range 24000 {
		z.RecordSets = append(z.RecordSets, config.RecordSet{Name: fmt.Sprintf("host-%d", i), Type: config.TypeTXT,
			Records: []config.Record{{Value: text}}})
	}
	s := startServer(t, Config{Transfer: TransferConfig{MaxTransfers: 3, MaxTransfersPerClient: 2, Timeout: timeout}})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{z}, nil))
	if err := s.SetTransfers(map[string]ZoneTransfer{apex: {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Secondaries: []Secondary{{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Key: xfrKeyName}}}},
		[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); (*s.xfr.versions.Load())[apex] == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no transfer version of the huge zone within 30s")
		}
	}
	size := 0
	for _, rr := range (*s.xfr.versions.Load())[apex].axfr() {
		size += dns.Len(rr)
	}
	meter := calibrate.Start()
	defer meter.Stop()
	start := time.Now()
	var stalled []net.Conn
	for _, local := range []string{"127.0.0.1", "127.0.0.2", "127.0.1.1"} {
		c, rcode := startTransfer(t, local, s.Addr(), apex)
		if rcode != dns.RcodeSuccess {
			t.Fatalf("stalled client %s: %s, want a transfer", local, dns.RcodeToString[rcode])
		}
		stalled = append(stalled, c)
	}
	if n := testutil.ToFloat64(s.xfr.m.active); n != 3 {
		t.Fatalf("%v transfers active, want the 3 stalled", n)
	}
	for _, local := range []string{"127.0.0.3", "127.0.2.1"} {
		c, rcode := startTransfer(t, local, s.Addr(), apex)
		c.Close()
		if rcode != dns.RcodeRefused {
			t.Errorf("client %s beside the stalled ones: %s, want REFUSED", local, dns.RcodeToString[rcode])
		}
	}
	if n := testutil.ToFloat64(s.xfr.m.refused.WithLabelValues(refuseBusy)); n != 2 {
		t.Errorf("refused as busy: %v, want 2", n)
	}
	aborted := s.xfr.m.transfers.WithLabelValues(apex, "axfr", "aborted")
	for testutil.ToFloat64(aborted) < 3 {
		if bound := meter.Reading().Scale(timeout + time.Second); time.Since(start) > bound {
			t.Fatalf("after %s (bound %s), %v of the 3 stalled transfers ended", time.Since(start), bound, testutil.ToFloat64(aborted))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("3 stalled transfers of a %d-byte zone ended after %s (timeout %s)", size, time.Since(start).Round(time.Millisecond), timeout)
	for i, c := range stalled {
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		if n >= int64(size) {
			t.Errorf("stalled client %d read %d bytes after the timeout, the whole zone (%d)", i, n, size)
		}
	}
	if n := testutil.ToFloat64(s.xfr.m.active); n != 0 {
		t.Errorf("%v transfers active after the timeout", n)
	}
	c, rcode := startTransfer(t, "127.0.2.1", s.Addr(), apex)
	c.Close()
	if rcode != dns.RcodeSuccess {
		t.Errorf("a client once the stalled transfers ended: %s", dns.RcodeToString[rcode])
	}
}

// startTransfer asks addr, from the address local with a receive buffer of 4 KiB, for an AXFR
// of apex signed with the test key, reads the first message, and returns the connection
// unread beyond it with that message's rcode.
func startTransfer(t *testing.T, local string, addr netip.AddrPort, apex string) (net.Conn, int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 2 * time.Second,
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			if err != nil {
				return err
			}
			return serr
		}}
	c, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	m := new(dns.Msg)
	m.SetAxfr(apex)
	m.SetTsig(xfrKeyName, dns.HmacSHA256, 300, time.Now().Unix())
	wire, _, err := dns.TsigGenerate(m, xfrKeySecret, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTCP(c, wire); err != nil {
		t.Fatal(err)
	}
	var l [2]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		t.Fatalf("%s: read the answer: %v", local, err)
	}
	buf := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(c, buf); err != nil || len(buf) < 12 {
		t.Fatalf("%s: read the answer: %v", local, err)
	}
	return c, int(buf[3] & 0xF)
}
