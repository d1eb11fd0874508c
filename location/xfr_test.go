package location

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/nsdtest"
)

// The TSIG keys of the transfer tests: the one the location holds, and one it does not.
const (
	xfrKeyName    = "vigil-xfr."
	xfrKeySecret  = "dmlnaWwtdHJhbnNmZXItdGVzdC1rZXktMDAwMDAwMDA="
	xfrWrongKey   = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktMDA="
	xfrDemoApex   = "demo.vigil.test."
	xfrTestRegion = "us-east"
)

// demoDocument reads examples/demo.yaml.
func demoDocument(t testing.TB) *config.Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := config.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// startXfrServer starts a location serving the demo zones with serials kept in dir, that
// transfers every demo zone to the networks allow with the test key, and notifies secs.
func startXfrServer(t testing.TB, dir string, allow []netip.Prefix, secs []Secondary) *Server {
	t.Helper()
	s := startServer(t, Config{Transfer: TransferConfig{DataDir: dir}})
	doc := demoDocument(t)
	s.SetSnapshot(mustSnapshot(t, doc.Zones, map[string][]NameServer{
		xfrDemoApex: ShardNameServers([]int{3, 97}, doc.NameServers.Domain, nil),
	}))
	if len(secs) == 0 {
		secs = []Secondary{{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Key: xfrKeyName}}
	}
	zones := map[string]ZoneTransfer{}
	for _, z := range doc.Zones {
		zones[z.Name] = ZoneTransfer{Allow: allow, Secondaries: secs}
	}
	if err := s.SetTransfers(zones, []TSIGKey{{Name: xfrKeyName, Algorithm: "hmac-sha256", Secret: xfrKeySecret}}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, s, xfrDemoApex)
	return s
}

// waitServed waits until the transfer loop has a version of apex.
func waitServed(t testing.TB, s *Server, apex string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); (*s.xfr.versions.Load())[apex] == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no transfer version of %s within 5s", apex)
		}
	}
}

// transfer asks addr for a transfer of apex (IXFR from serial when ixfr), signed with the
// key name and secret (none when name is empty), and returns the records, or the error.
func transfer(addr netip.AddrPort, apex string, ixfr bool, serial uint32, name, secret string) ([]dns.RR, error) {
	m := new(dns.Msg)
	if ixfr {
		m.SetIxfr(apex, serial, "ns.", "hostmaster.")
	} else {
		m.SetAxfr(apex)
	}
	tr := &dns.Transfer{DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second}
	if name != "" {
		m.SetTsig(name, dns.HmacSHA256, 300, time.Now().Unix())
		tr.TsigSecret = map[string]string{name: secret}
	}
	ch, err := tr.In(m, addr.String())
	if err != nil {
		return nil, err
	}
	var out []dns.RR
	for env := range ch {
		if env.Error != nil {
			return out, env.Error
		}
		out = append(out, env.RR...)
	}
	return out, nil
}

// addrsOf returns the A values of name among rrs, sorted.
func addrsOf(rrs []dns.RR, name string) []string {
	var out []string
	for _, rr := range rrs {
		if a, ok := rr.(*dns.A); ok && strings.EqualFold(a.Hdr.Name, name) {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out
}

// A location transfers the demo zone as it answers it: the failover record in force, every
// healthy weighted and multivalue record; a verdict raises the serial, which the SOA answers
// too; IXFR sends the change, and the whole zone for a serial it does not hold; the serial
// never goes back across a restart.
func TestTransferFollowsVerdicts(t *testing.T) {
	dir := t.TempDir()
	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	s := startXfrServer(t, dir, loop, nil)
	rrs, err := transfer(s.Addr(), xfrDemoApex, false, 0, xfrKeyName, xfrKeySecret)
	if err != nil {
		t.Fatalf("AXFR: %v", err)
	}
	first, ok := rrs[0].(*dns.SOA)
	if !ok || len(rrs) < 3 || rrs[len(rrs)-1].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("AXFR does not start and end with the SOA: %v", rrs)
	}
	if serial, _ := s.Serial(xfrDemoApex); serial != first.Serial {
		t.Fatalf("SOA serial answered %d, transferred %d", serial, first.Serial)
	}
	if r := exchange(t, "udp", s.Addr(), query(xfrDemoApex, dns.TypeSOA, 0)); r.Answer[0].(*dns.SOA).Serial != first.Serial {
		t.Fatalf("SOA query answers serial %d, transfer %d", r.Answer[0].(*dns.SOA).Serial, first.Serial)
	}
	for name, want := range map[string][]string{
		"www." + xfrDemoApex: {"192.0.2.1"},
		"api." + xfrDemoApex: {"192.0.2.1", "198.51.100.1", "203.0.113.1"},
		"all." + xfrDemoApex: {"192.0.2.1", "198.51.100.1", "203.0.113.1"},
	} {
		if got := addrsOf(rrs, name); !slices.Equal(got, want) {
			t.Errorf("AXFR %s: %v, want %v", name, got, want)
		}
	}

	s.SetVerdicts(map[string]bool{"web-us-east": false})
	second := nextSerial(t, s, xfrDemoApex, first.Serial)
	if !serialBefore(first.Serial, second) {
		t.Fatalf("serial went from %d to %d", first.Serial, second)
	}
	diff, err := transfer(s.Addr(), xfrDemoApex, true, first.Serial, xfrKeyName, xfrKeySecret)
	if err != nil {
		t.Fatalf("IXFR: %v", err)
	}
	// SOA new, SOA old, deleted, SOA new, added, SOA new.
	if len(diff) < 4 || diff[1].(*dns.SOA).Serial != first.Serial || len(diff) >= len(rrs) {
		t.Fatalf("IXFR from %d: %v", first.Serial, diff)
	}
	var deleted, added []string
	inAdded := false
	for _, rr := range diff[2 : len(diff)-1] {
		if _, ok := rr.(*dns.SOA); ok {
			inAdded = true
			continue
		}
		if inAdded {
			added = append(added, rr.String())
		} else {
			deleted = append(deleted, rr.String())
		}
	}
	if !slices.ContainsFunc(deleted, func(s string) bool { return strings.HasPrefix(s, "www.") && strings.HasSuffix(s, "192.0.2.1") }) ||
		!slices.ContainsFunc(added, func(s string) bool { return strings.HasPrefix(s, "www.") && strings.HasSuffix(s, "198.51.100.1") }) {
		t.Fatalf("IXFR: deleted %v, added %v", deleted, added)
	}
	whole, err := transfer(s.Addr(), xfrDemoApex, true, first.Serial-1000, xfrKeyName, xfrKeySecret)
	if err != nil {
		t.Fatalf("IXFR from a serial not held: %v", err)
	}
	if len(whole) < 3 || whole[1].Header().Rrtype == dns.TypeSOA || addrsOf(whole, "www."+xfrDemoApex)[0] != "198.51.100.1" {
		t.Fatalf("IXFR from a serial not held is not the whole zone: %v", whole)
	}
	if cur, err := transfer(s.Addr(), xfrDemoApex, true, second, xfrKeyName, xfrKeySecret); err != nil || len(cur) != 1 {
		t.Fatalf("IXFR from the current serial: %v %v", cur, err)
	}

	// A location started again on the same data dir never goes back.
	s2 := startXfrServer(t, dir, loop, nil)
	if third, _ := s2.Serial(xfrDemoApex); !serialBefore(second, third) {
		t.Fatalf("after a restart the serial went from %d to %d", second, third)
	}
}

// Transfers need an allowed network and the zone's TSIG key; refusals are counted.
func TestTransferRefusals(t *testing.T) {
	s := startXfrServer(t, t.TempDir(), []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	elsewhere := startXfrServer(t, t.TempDir(), []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		[]Secondary{{Addr: netip.MustParseAddrPort("192.0.2.53:53"), Key: xfrKeyName}})
	// A location whose zones have no transfers section (the default) transfers none.
	plain := startServer(t, Config{})
	doc := demoDocument(t)
	plain.SetSnapshot(mustSnapshot(t, doc.Zones, map[string][]NameServer{
		xfrDemoApex: ShardNameServers([]int{3, 97}, doc.NameServers.Domain, nil),
	}))
	// The zone of another key: transferred with otherKey, which the location holds too.
	other := startXfrServer(t, t.TempDir(), []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	const otherKey = "other-zone-key."
	if err := other.SetTransfers(map[string]ZoneTransfer{
		xfrDemoApex: {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			Secondaries: []Secondary{{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Key: xfrKeyName}}},
		"example.com.": {Secondaries: []Secondary{{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Key: otherKey}}},
	}, []TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}, {Name: otherKey, Secret: xfrWrongKey}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		s            *Server
		key, secret  string
		alg          string
		ixfr         bool
		want, reason string
	}{
		{"no transfers section", plain, xfrKeyName, xfrKeySecret, dns.HmacSHA256, false, "REFUSED", refuseNotOffer},
		{"no key", s, "", "", "", false, "REFUSED", refuseNoKey},
		{"no key, IXFR", s, "", "", "", true, "REFUSED", refuseNoKey},
		{"wrong secret", s, xfrKeyName, xfrWrongKey, dns.HmacSHA256, false, "NOTAUTH", refuseBadSig},
		{"unknown key", s, "other-key.", xfrKeySecret, dns.HmacSHA256, false, "NOTAUTH", refuseBadKey},
		{"the key, with HMAC-MD5", s, xfrKeyName, xfrKeySecret, dns.HmacMD5, false, "NOTAUTH", refuseBadKey},
		{"the key, with HMAC-SHA1", s, xfrKeyName, xfrKeySecret, dns.HmacSHA1, false, "NOTAUTH", refuseBadKey},
		{"the key, with HMAC-SHA512", s, xfrKeyName, xfrKeySecret, dns.HmacSHA512, true, "NOTAUTH", refuseBadKey},
		{"another zone's key", other, otherKey, xfrWrongKey, dns.HmacSHA256, false, "NOTAUTH", refuseBadKey},
		{"network not allowed", elsewhere, xfrKeyName, xfrKeySecret, dns.HmacSHA256, false, "REFUSED", refuseNetwork},
	}
	for _, c := range cases {
		if rcode := transferRcode(t, c.s.Addr(), xfrDemoApex, c.ixfr, c.key, c.secret, c.alg); rcode != c.want {
			t.Errorf("%s: %s, want %s", c.name, rcode, c.want)
		}
		if n := testutil.ToFloat64(c.s.xfr.m.refused.WithLabelValues(c.reason)); n == 0 {
			t.Errorf("%s: not counted as %s", c.name, c.reason)
		}
	}
	// Over UDP, a transfer is refused.
	m := new(dns.Msg)
	m.SetAxfr(xfrDemoApex)
	if r := exchange(t, "udp", s.Addr(), m); r.Rcode != dns.RcodeRefused {
		t.Errorf("AXFR over UDP: %s", dns.RcodeToString[r.Rcode])
	}
}

// transferRcode sends one transfer request for apex, signed with the key name and secret
// with the TSIG algorithm alg (none when name is empty), over TCP, and returns the first
// response's rcode, unverified; a response that carries records fails the test.
func transferRcode(t testing.TB, addr netip.AddrPort, apex string, ixfr bool, name, secret, alg string) string {
	t.Helper()
	m := new(dns.Msg)
	if ixfr {
		m.SetIxfr(apex, 1, "ns.", "hostmaster.")
	} else {
		m.SetAxfr(apex)
	}
	wire, err := m.Pack()
	if name != "" {
		m.SetTsig(name, alg, 300, time.Now().Unix())
		wire, _, err = dns.TsigGenerateWithProvider(m, anyHMAC(secret), "", false)
	}
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", addr.String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeTCP(conn, wire); err != nil {
		t.Fatal(err)
	}
	var l [2]byte
	if _, err := io.ReadFull(conn, l[:]); err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	buf := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(conn, buf); err != nil {
		t.Fatal(err)
	}
	r := new(dns.Msg)
	if err := r.Unpack(buf); err != nil {
		t.Fatal(err)
	}
	if len(r.Answer) > 0 && r.Rcode != dns.RcodeSuccess {
		t.Errorf("a refusal carries %d records", len(r.Answer))
	}
	return dns.RcodeToString[r.Rcode]
}

// anyHMAC signs TSIG with the secret and the algorithm the record names, HMAC-MD5 (RFC 8945
// §6, which miekg/dns no longer makes) included, so that a test can send what an old
// secondary would.
type anyHMAC string

func (k anyHMAC) Generate(msg []byte, t *dns.TSIG) ([]byte, error) {
	secret, err := base64.StdEncoding.DecodeString(string(k))
	if err != nil {
		return nil, err
	}
	var h hash.Hash
	switch dns.CanonicalName(t.Algorithm) {
	case dns.HmacMD5:
		h = hmac.New(md5.New, secret)
	case dns.HmacSHA1:
		h = hmac.New(sha1.New, secret)
	case dns.HmacSHA256:
		h = hmac.New(sha256.New, secret)
	case dns.HmacSHA512:
		h = hmac.New(sha512.New, secret)
	default:
		return nil, dns.ErrKeyAlg
	}
	h.Write(msg)
	return h.Sum(nil), nil
}

func (k anyHMAC) Verify(msg []byte, t *dns.TSIG) error { return nil }

// startDemoWithSecondaries starts a location with the demo zones and NSD and Knot as their
// secondaries (those installed), all notified.
func startDemoWithSecondaries(t *testing.T) (*Server, []*secondary) {
	t.Helper()
	apexes := []string{}
	for _, z := range demoDocument(t).Zones {
		apexes = append(apexes, canonical(z.Name))
	}
	return startWithSecondaries(t, apexes, func(secs []Secondary) *Server {
		return startXfrServer(t, t.TempDir(), nil, secs)
	})
}

// secondaryBinaries reports whether NSD and Knot are installed, skipping the test when
// neither is.
func secondaryBinaries(t *testing.T) (nsd, knot bool) {
	_, knotErr := exec.LookPath("knotd")
	nsd, knot = nsdtest.Binary() != "", knotErr == nil
	if !nsd && !knot {
		t.Skip("neither NSD nor Knot is installed (Debian: nsd, knot; .ci/run installs them)")
	}
	return nsd, knot
}

// NSD and Knot, secondaries of a location with TSIG, transfer every demo zone and answer
// every name and type as the location does: the same records (a weighted set: every healthy
// record, among which the one the location answers), the same SOA with the same serial, the
// same rcode; after a failover too.
func TestTransferSecondariesDifferential(t *testing.T) {
	s, secs := startDemoWithSecondaries(t)
	doc := demoDocument(t)
	weighted := map[string]bool{}
	for _, z := range doc.Zones {
		for _, rs := range z.RecordSets {
			if rs.Policy == config.PolicyWeighted {
				weighted[config.OwnerName(rs.Name, canonical(z.Name))+"/"+string(rs.Type)] = true
			}
		}
	}
	compare := func(stage string) {
		names := diffNames(doc)
		asked := 0
		for _, sec := range secs {
			for _, name := range names {
				name = canonical(name)
				for _, qtype := range diffTypes() {
					if qtype == dns.TypeANY {
						continue
					}
					asked++
					a, b := askAt(t, s.Addr(), name, qtype), askAt(t, sec.addr, name, qtype)
					if a.Rcode != b.Rcode {
						t.Errorf("%s %s: %s %s: rcode %s, location %s", stage, sec.name, name, dns.TypeToString[qtype], dns.RcodeToString[b.Rcode], dns.RcodeToString[a.Rcode])
						continue
					}
					la, lb := rrStrings(a.Answer), rrStrings(b.Answer)
					if weighted[name+"/"+dns.TypeToString[qtype]] {
						if len(la) != 1 || !slices.Contains(lb, la[0]) {
							t.Errorf("%s %s: %s %s: weighted set %v does not hold the location's %v", stage, sec.name, name, dns.TypeToString[qtype], lb, la)
						}
					} else if !slices.Equal(la, lb) {
						t.Errorf("%s %s: %s %s: answer\n%v\nlocation\n%v", stage, sec.name, name, dns.TypeToString[qtype], lb, la)
					}
					if na, nb := rrStrings(a.Ns), rrStrings(b.Ns); len(a.Answer) == 0 && !slices.Equal(na, nb) {
						t.Errorf("%s %s: %s %s: authority\n%v\nlocation\n%v", stage, sec.name, name, dns.TypeToString[qtype], nb, na)
					}
				}
			}
		}
		t.Logf("%s: %d questions compared", stage, asked)
	}
	compare("all healthy")
	before, _ := s.Serial(xfrDemoApex)
	s.SetVerdicts(map[string]bool{"web-us-east": false, "web-sa-east": false})
	serial := nextSerial(t, s, xfrDemoApex, before)
	for _, sec := range secs {
		waitSerial(t, sec, xfrDemoApex, serial, 10*time.Second)
	}
	compare("us-east and sa-east down")
}

// waitSerial waits until sec answers serial for apex's SOA 20 times in a row (NSD's old
// server process answers for a moment after a reload), failing after limit.
func waitSerial(t testing.TB, sec *secondary, apex string, serial uint32, limit time.Duration) {
	t.Helper()
	for end, run := time.Now().Add(limit), 0; ; time.Sleep(5 * time.Millisecond) {
		r := askAt(t, sec.addr, apex, dns.TypeSOA)
		if len(r.Answer) > 0 && r.Answer[0].(*dns.SOA).Serial == serial {
			if run++; run == 20 {
				return
			}
			continue
		}
		run = 0
		if time.Now().After(end) {
			t.Fatalf("%s did not reach serial %d of %s within %s: %v\n%s%s", sec.name, serial, apex, limit, r.Answer, sec.out.String(), sec.log())
		}
	}
}

// nextSerial waits until the location answers a serial of apex other than old, and returns it.
func nextSerial(t testing.TB, s *Server, apex string, old uint32) uint32 {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if serial, _ := s.Serial(apex); serial != old {
			return serial
		}
		if time.Now().After(end) {
			t.Fatalf("the serial of %s stayed %d for 5s after a change", apex, old)
		}
	}
}

// IXFR from a serial the location no longer holds (its history keeps the last History
// changes) gets the whole zone, and is counted so.
func TestTransferIXFRPastHistory(t *testing.T) {
	s := startServer(t, Config{Transfer: TransferConfig{History: 2}})
	doc := demoDocument(t)
	s.SetSnapshot(mustSnapshot(t, doc.Zones, map[string][]NameServer{
		xfrDemoApex: ShardNameServers([]int{3, 97}, doc.NameServers.Domain, nil),
	}))
	if err := s.SetTransfers(map[string]ZoneTransfer{xfrDemoApex: {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Secondaries: []Secondary{{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Key: xfrKeyName}}}},
		[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, s, xfrDemoApex)
	serials := []uint32{}
	serial, _ := s.Serial(xfrDemoApex)
	serials = append(serials, serial)
	for _, down := range []string{"web-us-east", "web-eu-west", "web-sa-east"} {
		s.SetVerdicts(map[string]bool{down: false})
		serial = nextSerial(t, s, xfrDemoApex, serial)
		serials = append(serials, serial)
	}
	// Held: the last two changes.
	rrs, err := transfer(s.Addr(), xfrDemoApex, true, serials[1], xfrKeyName, xfrKeySecret)
	if err != nil || len(rrs) < 2 || rrs[1].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("IXFR from %d (held): %v %v", serials[1], rrs, err)
	}
	// Dropped: the first change.
	rrs, err = transfer(s.Addr(), xfrDemoApex, true, serials[0], xfrKeyName, xfrKeySecret)
	if err != nil || len(rrs) < 3 || rrs[1].Header().Rrtype == dns.TypeSOA {
		t.Fatalf("IXFR from %d (no longer held) is not the whole zone: %v %v", serials[0], rrs, err)
	}
	if n := testutil.ToFloat64(s.xfr.m.transfers.WithLabelValues(xfrDemoApex, "ixfr_axfr", "ok")); n != 1 {
		t.Errorf("whole-zone answers to IXFR counted %v, want 1", n)
	}
}

// TSIG keys weaker than HMAC-SHA256, with a short secret or a name that is not a domain name
// are refused, as is a secondary
// whose key the location does not hold; a key file names each line it cannot read.
func TestTransferKeysRefused(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	sec := map[string]ZoneTransfer{xfrDemoApex: {Secondaries: []Secondary{{Addr: netip.MustParseAddrPort("192.0.2.53:53"), Key: "other."}}}}
	for _, c := range []struct {
		keys []TSIGKey
		want string
	}{
		{[]TSIGKey{{Name: xfrKeyName, Algorithm: "hmac-sha1", Secret: xfrKeySecret}}, `algorithm "hmac-sha1"`},
		{[]TSIGKey{{Name: xfrKeyName, Algorithm: "hmac-md5.sig-alg.reg.int.", Secret: xfrKeySecret}}, "want hmac-sha256"},
		{[]TSIGKey{{Name: xfrKeyName, Secret: "c2hvcnQ="}}, "at least 16 bytes"},
		{[]TSIGKey{{Name: "bad..name", Secret: xfrKeySecret}}, "not a domain name"},
		{[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}, {Name: "VIGIL-XFR", Secret: xfrKeySecret}}, "given twice"},
		{[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}, "no TSIG key other."},
	} {
		if err := s.SetTransfers(sec, c.keys); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("keys %+v: %v, want %q", c.keys, err, c.want)
		}
	}
	keys, err := ReadTSIGKeys(strings.NewReader("# keys\nhmac-sha512:a.:" + xfrKeySecret + "\n\nb.:" + xfrKeySecret + "\n"))
	if err != nil || len(keys) != 2 || keys[0].Algorithm != "hmac-sha512" || keys[1].Name != "b." || CheckTSIGKeys(keys) != nil {
		t.Errorf("key file: %+v, %v", keys, err)
	}
	if _, err := ReadTSIGKeys(strings.NewReader("a.:" + xfrKeySecret + "\nnot a key\n::\n")); err == nil ||
		!strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a bad key file: %v", err)
	}
}

// A write raises the serial of a transferred zone when it changes what the zone transfers (a
// record, an SOA field), and IXFR carries the change; a snapshot compiled again with the same
// zone keeps the serial, so that secondaries do not fetch a version that changed nothing.
func TestTransferFollowsWrites(t *testing.T) {
	s := startXfrServer(t, t.TempDir(), []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	doc := demoDocument(t)
	shards := map[string][]NameServer{xfrDemoApex: ShardNameServers([]int{3, 97}, doc.NameServers.Domain, nil)}
	first, _ := s.Serial(xfrDemoApex)

	again := mustSnapshot(t, doc.Zones, shards)
	s.SetSnapshot(again)
	for end := time.Now().Add(5 * time.Second); (*s.xfr.versions.Load())[xfrDemoApex].zone != again.zones[xfrDemoApex]; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the transfer loop did not take the zone compiled again within 5s")
		}
	}
	if serial, _ := s.Serial(xfrDemoApex); serial != first {
		t.Fatalf("the same zone compiled again moved the serial from %d to %d", first, serial)
	}

	z := &doc.Zones[0]
	for i := range z.RecordSets {
		if z.RecordSets[i].Name == "static" || strings.HasPrefix(z.RecordSets[i].Name, "static.") {
			z.RecordSets[i].Records[0].Value = "192.0.2.200"
		}
	}
	s.SetSnapshot(mustSnapshot(t, doc.Zones, shards))
	second := nextSerial(t, s, xfrDemoApex, first)
	diff, err := transfer(s.Addr(), xfrDemoApex, true, first, xfrKeyName, xfrKeySecret)
	if err != nil {
		t.Fatalf("IXFR: %v", err)
	}
	var texts []string
	for _, rr := range diff {
		texts = append(texts, rr.String())
	}
	joined := strings.Join(texts, "\n")
	if !strings.Contains(joined, "192.0.2.100") || !strings.Contains(joined, "192.0.2.200") || len(diff) > 8 {
		t.Fatalf("IXFR after a write of static: %s", joined)
	}

	z.SOA.Refresh = 3600
	s.SetSnapshot(mustSnapshot(t, doc.Zones, shards))
	third := nextSerial(t, s, xfrDemoApex, second)
	rrs, err := transfer(s.Addr(), xfrDemoApex, false, 0, xfrKeyName, xfrKeySecret)
	if err != nil || rrs[0].(*dns.SOA).Refresh != 3600 || rrs[0].(*dns.SOA).Serial != third {
		t.Fatalf("AXFR after a write of the SOA: %v %v", rrs[0], err)
	}
}
