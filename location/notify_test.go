package location

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// notifySecondary is a secondary that records the NOTIFY messages it gets and answers those
// that answer(n) allows (n counts from 1), signed with the test key.
type notifySecondary struct {
	addr   netip.AddrPort
	answer func(n int) bool
	mu     sync.Mutex
	got    []uint32 // the SOA serial of each NOTIFY whose TSIG verified
	forged int      // NOTIFY messages without a valid TSIG
}

func startNotifySecondary(t *testing.T, answer func(n int) bool) *notifySecondary {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ns := &notifySecondary{addr: pc.LocalAddr().(*net.UDPAddr).AddrPort(), answer: answer}
	srv := &dns.Server{PacketConn: pc, TsigSecret: map[string]string{xfrKeyName: xfrKeySecret},
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			if r.Opcode != dns.OpcodeNotify || r.IsTsig() == nil || w.TsigStatus() != nil || len(r.Answer) != 1 {
				ns.mu.Lock()
				ns.forged++
				ns.mu.Unlock()
				return
			}
			ns.mu.Lock()
			ns.got = append(ns.got, r.Answer[0].(*dns.SOA).Serial)
			n := len(ns.got)
			ns.mu.Unlock()
			if !ns.answer(n) {
				return
			}
			m := new(dns.Msg)
			m.SetReply(r)
			m.SetTsig(xfrKeyName, dns.HmacSHA256, 300, time.Now().Unix())
			_ = w.WriteMsg(m)
		})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ns
}

func (ns *notifySecondary) serials() ([]uint32, int) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return append([]uint32(nil), ns.got...), ns.forged
}

// startNotifyServer starts a location that transfers a small zone and notifies sec, with
// NOTIFY sent attempts times at most.
func startNotifyServer(t *testing.T, sec netip.AddrPort, attempts int) *Server {
	t.Helper()
	const apex = "notify.test."
	z := config.DefaultZone()
	z.Name = apex
	z.NameServers = []string{"ns1.notify.test."}
	z.RecordSets = []config.RecordSet{{Name: "www", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
		{Value: "192.0.2.1", HealthCheck: "p", Role: config.RolePrimary},
		{Value: "192.0.2.2", HealthCheck: "s", Role: config.RoleSecondary}}}}
	s := startServer(t, Config{Transfer: TransferConfig{NotifyAttempts: attempts}})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{z}, nil))
	if err := s.SetTransfers(map[string]ZoneTransfer{apex: {Secondaries: []Secondary{{Addr: sec, Key: xfrKeyName}}}},
		[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitCount waits until the counter reaches want, failing after the idle bound quiet scaled
// by the slowdown measured meanwhile.
func waitCount(t *testing.T, what string, get func() float64, want float64, quiet time.Duration) {
	t.Helper()
	meter := calibrate.Start()
	defer meter.Stop()
	for get() < want {
		if !meter.Within(quiet) {
			t.Fatalf("%s: %v after %s, want %v", what, get(), meter.Reading().Wall.Round(time.Millisecond), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A NOTIFY that gets no answer is sent again, each wait twice the one before, and given up
// after TransferConfig.NotifyAttempts sends; one answered after a loss is counted acked. Every
// NOTIFY is signed with the secondary's key and carries the zone's current serial, and each
// is counted in vigil_location_notify_*.
func TestNotifyRetriedAndGivenUp(t *testing.T) {
	const apex = "notify.test."
	silent := startNotifySecondary(t, func(int) bool { return false })
	s := startNotifyServer(t, silent.addr, 3)
	m := s.xfr.m
	// Waits of 250 ms, 500 ms and 1 s: given up after about 1.75 s.
	waitCount(t, "NOTIFY given up", func() float64 { return testutil.ToFloat64(m.notifyGivenUp.WithLabelValues(apex)) }, 1, 5*time.Second)
	got, forged := silent.serials()
	serial, _ := s.Serial(apex)
	if len(got) != 3 || forged != 0 || got[0] != serial || got[2] != serial {
		t.Errorf("a silent secondary got serials %v (%d without a valid TSIG), want 3 NOTIFY of %d", got, forged, serial)
	}
	if sent, failed := testutil.ToFloat64(m.notifySent.WithLabelValues(apex)), testutil.ToFloat64(m.notifyFailures.WithLabelValues(apex)); sent != 3 || failed != 3 {
		t.Errorf("sent %v, failures %v; want 3 and 3", sent, failed)
	}

	lossy := startNotifySecondary(t, func(n int) bool { return n >= 2 })
	s = startNotifyServer(t, lossy.addr, 3)
	m = s.xfr.m
	waitCount(t, "NOTIFY acked", func() float64 { return testutil.ToFloat64(m.notifyAcked.WithLabelValues(apex)) }, 1, 3*time.Second)
	time.Sleep(300 * time.Millisecond) // a third send would come now
	got, _ = lossy.serials()
	if len(got) != 2 || testutil.ToFloat64(m.notifyFailures.WithLabelValues(apex)) != 1 || testutil.ToFloat64(m.notifyGivenUp.WithLabelValues(apex)) != 0 {
		t.Errorf("a secondary that lost the first NOTIFY got %v; failures %v, given up %v", got,
			testutil.ToFloat64(m.notifyFailures.WithLabelValues(apex)), testutil.ToFloat64(m.notifyGivenUp.WithLabelValues(apex)))
	}
}

// Changes that come while a NOTIFY waits for its answer replace it: a secondary that does not
// answer gets the first change's NOTIFY and then the last one's, its attempts, never one a
// change; the senders are bounded by the secondaries, not by the rate of changes.
func TestNotifyCoalescesChanges(t *testing.T) {
	const apex = "notify.test."
	silent := startNotifySecondary(t, func(int) bool { return false })
	s := startNotifyServer(t, silent.addr, 2)
	m := s.xfr.m
	given := func() float64 { return testutil.ToFloat64(m.notifyGivenUp.WithLabelValues(apex)) }
	waitCount(t, "the first change given up", given, 1, 5*time.Second)
	first, _ := silent.serials()

	st := s.xfr.settings.Load()
	ver := (*s.xfr.versions.Load())[apex]
	var last uint32
	for i := range uint32(50) {
		soa := *ver.soa.soa
		soa.Serial += 1000 + i
		last = soa.Serial
		s.xfr.notifier.notify(context.Background(), apex, &soa, st.zones[apex].Secondaries, st.keys)
	}
	waitCount(t, "the last change given up", given, 2, 5*time.Second)
	all, forged := silent.serials()
	later := all[len(first):]
	// The first change's NOTIFY may be sent once before the others replace it.
	if len(later) < 2 || len(later) > 3 || later[len(later)-1] != last || later[len(later)-2] != last || forged != 0 {
		t.Errorf("50 changes while the secondary is silent: NOTIFY of serials %v (%d forged), want at most 3, the last two of %d", later, forged, last)
	}
	if n := testutil.ToFloat64(m.notifySent.WithLabelValues(apex)); int(n) != len(all) {
		t.Errorf("sent counted %v, the secondary got %d", n, len(all))
	}
}

// A secondary that asks for the serial a NOTIFY announces, the moment it gets the NOTIFY, is
// served that version: the location installs a version before it announces it. With 40
// zones changed at once, each NOTIFY's IXFR from its own serial must answer that serial
// (the SOA alone), never the version before (which would tell the secondary nothing changed,
// and leave it behind until its refresh).
func TestNotifyAnnouncesAnInstalledVersion(t *testing.T) {
	var s atomic.Pointer[Server]
	var mu sync.Mutex
	var checked int
	var wrong []string
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, TsigSecret: map[string]string{xfrKeyName: xfrKeySecret},
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			loc := s.Load()
			if r.Opcode != dns.OpcodeNotify || w.TsigStatus() != nil || len(r.Answer) != 1 || loc == nil {
				return
			}
			apex, serial := r.Question[0].Name, r.Answer[0].(*dns.SOA).Serial
			rrs, err := transfer(loc.Addr(), apex, true, serial, xfrKeyName, xfrKeySecret)
			mu.Lock()
			checked++
			if err != nil || len(rrs) == 0 || rrs[0].(*dns.SOA).Serial != serial {
				got := "nothing"
				if len(rrs) > 0 {
					got = fmt.Sprintf("serial %d in %d records", rrs[0].(*dns.SOA).Serial, len(rrs))
				}
				wrong = append(wrong, fmt.Sprintf("%s: NOTIFY of %d, IXFR from it answered %s (%v)", apex, serial, got, err))
			}
			mu.Unlock()
			m := new(dns.Msg)
			m.SetReply(r)
			m.SetTsig(xfrKeyName, dns.HmacSHA256, 300, time.Now().Unix())
			_ = w.WriteMsg(m)
		})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	sec := pc.LocalAddr().(*net.UDPAddr).AddrPort()

	var zones []config.Zone
	transfers := map[string]ZoneTransfer{}
	for i := range 40 {
		z := config.DefaultZone()
		z.Name = fmt.Sprintf("z%d.notify.test.", i)
		z.NameServers = []string{"ns1." + z.Name}
		z.RecordSets = []config.RecordSet{{Name: "www", Type: config.TypeA, Policy: config.PolicyFailover, Records: []config.Record{
			{Value: "192.0.2.1", HealthCheck: "p", Role: config.RolePrimary},
			{Value: "192.0.2.2", HealthCheck: "s", Role: config.RoleSecondary}}}}
		zones = append(zones, z)
		transfers[z.Name] = ZoneTransfer{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			Secondaries: []Secondary{{Addr: sec, Key: xfrKeyName}}}
	}
	loc := startServer(t, Config{MaxTCPConns: 200, MaxTCPConnsPerClient: 100,
		Transfer: TransferConfig{MaxTransfers: 100, MaxTransfersPerClient: 100, WholeRate: -1}})
	loc.SetSnapshot(mustSnapshot(t, zones, nil))
	s.Store(loc)
	if err := loc.SetTransfers(transfers, []TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}); err != nil {
		t.Fatal(err)
	}
	acked := func() float64 {
		var n float64
		for _, z := range zones {
			n += testutil.ToFloat64(loc.xfr.m.notifyAcked.WithLabelValues(z.Name))
		}
		return n
	}
	for flip := range 4 {
		waitCount(t, "NOTIFY acked", acked, float64(40*(flip+1)), 10*time.Second)
		loc.SetVerdicts(map[string]bool{"p": flip%2 == 1})
	}
	waitCount(t, "NOTIFY acked", acked, 40*5, 10*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Errorf("%d of %d NOTIFY announced a serial the location did not serve yet:\n%s", len(wrong), checked, strings.Join(wrong, "\n"))
	}
}
