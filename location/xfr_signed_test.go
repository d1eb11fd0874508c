package location

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location/nsdtest"
	"github.com/vigil-dns/vigil/location/unboundtest"
)

// A signed zone transferred to NSD validates in unbound asking NSD alone: the transfer holds
// the DNSKEY set, a signature for every record set and a signed NSEC chain (the location's
// own answers use black lies, which cannot be transferred), so that NSD proves a name that
// does not exist with NXDOMAIN, a type a name lacks, a wildcard's answer; and a failover
// reaches unbound through NSD, signed.
func TestTransferSignedZoneValidates(t *testing.T) {
	if nsdtest.Binary() == "" {
		t.Skip("NSD is not installed (Debian: apt-get install nsd; .ci/run installs it)")
	}
	const apex = "example.test."
	port := nsdtest.FreePort(t)
	sec := Secondary{Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), Key: xfrKeyName}
	s := startServer(t, Config{Transfer: TransferConfig{DataDir: t.TempDir()}})
	s.SetSnapshot(mustSnapshot(t, []config.Zone{unboundZone()}, nil))
	sealer, err := dnssec.NewSealer([]byte("xfr-test-seal-secret-00000000000"))
	if err != nil {
		t.Fatal(err)
	}
	zk, err := dnssec.InitialKeys(apex, dnssec.SchemeSplit, sealer, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{DNSKEYTTL: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSigners(map[string]*dnssec.Signer{apex: sg})
	if err := s.SetTransfers(map[string]ZoneTransfer{apex: {Secondaries: []Secondary{sec}}},
		[]TSIGKey{{Name: xfrKeyName, Secret: xfrKeySecret}}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, s, apex)
	nsd := startNSDSecondary(t, port, s.Addr(), []string{apex})
	u := unboundtest.Start(t, apex, nsd.addr.String(), zk.Keys[0].DS(apex, 3600).String())

	r := u.Ask(t, "www."+apex, dns.TypeA)
	unboundtest.Secure(t, "www A", r)
	if v := unboundtest.Addrs(r); len(v) != 1 || v[0] != "192.0.2.1" {
		t.Fatalf("www A: %v", v)
	}
	unboundtest.Secure(t, "DNSKEY", u.Ask(t, apex, dns.TypeDNSKEY))
	unboundtest.Secure(t, "wildcard", u.Ask(t, "a.wild."+apex, dns.TypeA))
	unboundtest.Secure(t, "CNAME to the failover set", u.Ask(t, "alias."+apex, dns.TypeA))
	r = u.Ask(t, "nothing."+apex, dns.TypeA)
	if r.Rcode != dns.RcodeNameError || !r.AuthenticatedData {
		t.Fatalf("missing name through NSD: %s, AD %v, want NXDOMAIN validated (a real NSEC chain):\n%v", dns.RcodeToString[r.Rcode], r.AuthenticatedData, r)
	}
	r = u.Ask(t, "www."+apex, dns.TypeAAAA)
	unboundtest.Secure(t, "missing type", r)
	if len(r.Answer) != 0 {
		t.Fatalf("missing type answered: %v", r)
	}
	r = u.Ask(t, "big."+apex, dns.TypeTXT)
	unboundtest.Secure(t, "large answer", r)

	failover := func(want string) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			r := u.Ask(t, "fo."+apex, dns.TypeA)
			unboundtest.Secure(t, "fo A", r)
			if v := unboundtest.Addrs(r); len(v) == 1 && v[0] == want {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("fo A through NSD: %v, want %s within 10s", unboundtest.Addrs(r), want)
			}
		}
	}
	failover("192.0.2.10")
	s.SetVerdicts(map[string]bool{"p": false})
	failover("192.0.2.11")
	s.SetVerdicts(map[string]bool{"p": true})
	failover("192.0.2.10")
}
