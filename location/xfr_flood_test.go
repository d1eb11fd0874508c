package location

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
)

// A flood of transfer requests, from 8 client networks at once, signed and unsigned, does not
// slow the queries: the transfers served at once are bounded (TransferConfig.MaxTransfers,
// per network MaxTransfersPerClient), the others refused at once, and the queries are answered
// by their own UDP workers. The test measures the latency of the same queries before and
// during the flood, logs both, and fails when the flood's median passes 3 times the quiet one
// plus a millisecond, or its p99 20 times the quiet one plus 100 ms (the tail moves with the
// machine's load; transfers that starved the workers would cost seconds), or when the flood
// got no transfer through, or none refused.
func TestTransferFloodDoesNotSlowQueries(t *testing.T) {
	const apex = "big.test."
	z := config.DefaultZone()
	z.Name = apex
	z.NameServers = []string{"ns1.big.test."}
	for i := range 3000 {
		z.RecordSets = append(z.RecordSets, config.RecordSet{Name: fmt.Sprintf("host-%d", i), Type: config.TypeA,
			Records: []config.Record{{Value: fmt.Sprintf("192.0.%d.%d", i/250, i%250+1)}}})
	}
	s := startServer(t, Config{Transfer: TransferConfig{DataDir: t.TempDir(), MaxTransfers: 4}})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{z}, nil))
	if err := s.SetTransfers(map[string]ZoneTransfer{apex: {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Secondaries: []Secondary{{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Key: xfrKeyName}}}},
		[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, s, apex)
	size := 0
	for _, rr := range (*s.xfr.versions.Load())[apex].axfr() {
		size += dns.Len(rr)
	}
	size /= 2 // compressed, the answers are smaller

	measure := func() []time.Duration {
		c := &dns.Client{Timeout: 2 * time.Second}
		var d []time.Duration
		for i := range 1000 {
			m := new(dns.Msg)
			m.SetQuestion(fmt.Sprintf("host-%d.%s", i%3000, apex), dns.TypeA)
			start := time.Now()
			r, _, err := c.Exchange(m, s.Addr().String())
			if err != nil || len(r.Answer) != 1 {
				t.Fatalf("query %d: %v %v", i, r, err)
			}
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d
	}
	quiet := measure()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var served, refused atomic.Int64
	for n := range 8 {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, byte(n+1), 1)}
		for k := range 3 {
			wg.Go(func() {
				for ctx.Err() == nil {
					key := ""
					if k != 2 {
						key = xfrKeyName
					}
					if floodTransfer(local, s.Addr(), apex, key, size) {
						served.Add(1)
					} else {
						refused.Add(1)
					}
				}
			})
		}
	}
	time.Sleep(200 * time.Millisecond)
	flood := measure()
	cancel()
	wg.Wait()

	p := func(d []time.Duration, q int) time.Duration { return d[min(len(d)-1, len(d)*q/100)] }
	t.Logf("queries quiet: p50 %s p99 %s; during the flood (%d transfers served, %d refused or cut): p50 %s p99 %s",
		p(quiet, 50), p(quiet, 99), served.Load(), refused.Load(), p(flood, 50), p(flood, 99))
	if served.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("the flood got %d transfers served and %d refused: not a flood of the bounds", served.Load(), refused.Load())
	}
	if limit := 3*p(quiet, 50) + time.Millisecond; p(flood, 50) > limit {
		t.Errorf("the transfer flood slowed queries: p50 %s, quiet %s (limit %s)", p(flood, 50), p(quiet, 50), limit)
	}
	if limit := 20*p(quiet, 99) + 100*time.Millisecond; p(flood, 99) > limit {
		t.Errorf("the transfer flood slowed queries: p99 %s, quiet %s (limit %s)", p(flood, 99), p(quiet, 99), limit)
	}
}

// floodTransfer asks addr from the local address for an AXFR of apex, signed with the test
// key when key is not empty, and reads the answer without parsing it (the flood's clients
// must not cost the machine more than the server): it reports whether it got want bytes or
// more of answers that are not refusals.
func floodTransfer(local *net.TCPAddr, addr netip.AddrPort, apex, key string, want int) bool {
	d := net.Dialer{LocalAddr: local, Timeout: 2 * time.Second}
	conn, err := d.Dial("tcp", addr.String())
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	m := new(dns.Msg)
	m.SetAxfr(apex)
	wire, err := m.Pack()
	if key != "" {
		m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix())
		wire, _, err = dns.TsigGenerate(m, xfrKeySecret, "", false)
	}
	if err != nil || writeTCP(conn, wire) != nil {
		return false
	}
	got := 0
	buf := make([]byte, 65536)
	for got < want {
		var l [2]byte
		if _, err := io.ReadFull(conn, l[:]); err != nil {
			return false
		}
		n := int(binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(conn, buf[:n]); err != nil || n < 12 || buf[3]&0xF != dns.RcodeSuccess {
			return false
		}
		got += n
	}
	return true
}

// A transfer that would send more than TransferConfig.MaxBytes ends there, counted aborted.
func TestTransferByteBound(t *testing.T) {
	const apex = "big.test."
	z := config.DefaultZone()
	z.Name = apex
	z.NameServers = []string{"ns1.big.test."}
	for i := range 2000 {
		z.RecordSets = append(z.RecordSets, config.RecordSet{Name: fmt.Sprintf("host-%d", i), Type: config.TypeA,
			Records: []config.Record{{Value: fmt.Sprintf("192.0.%d.%d", i/250, i%250+1)}}})
	}
	s := startServer(t, Config{Transfer: TransferConfig{MaxBytes: 20000}})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{z}, nil))
	if err := s.SetTransfers(map[string]ZoneTransfer{apex: {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Secondaries: []Secondary{{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Key: xfrKeyName}}}},
		[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, s, apex)
	rrs, err := transfer(s.Addr(), apex, false, 0, xfrKeyName, xfrKeySecret)
	if err == nil || len(rrs) >= 2000 {
		t.Fatalf("a transfer past the byte bound: %d records, %v", len(rrs), err)
	}
	if n := testutil.ToFloat64(s.xfr.m.transfers.WithLabelValues(apex, "axfr", "aborted")); n != 1 {
		t.Fatalf("aborted transfers counted %v, want 1", n)
	}
}
