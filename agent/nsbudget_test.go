package agent

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location"
)

// A location's virtual name servers listen where Config.NameServers says, NameServerAddr
// tells where, and Config.NameServerBudget limits each of them: with a budget of 1 q/s, a
// burst of queries to one server gets at most a few answers, and its neighbour still answers.
func TestNameServerAddrAndBudget(t *testing.T) {
	doc, err := config.Decode([]byte(`
regions: [us-east]
name_servers: {fleet: 4, shard_size: 4}
zones:
  - name: budget.vigil.test
    record_sets:
      - {name: www, type: A, records: [{value: 192.0.2.7}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "ns-budget", "us-east", RoleLocation, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.HTTPAddr, cfg.DNSAddr, cfg.Static = "off", "127.0.0.1:0", doc
	cfg.NameServers = map[int]string{1: "127.0.1.21:0", 2: "127.0.1.22:0"}
	cfg.NameServerBudget = 1
	cfg.Logger, cfg.Registerer = testLogger(), newReg()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, n)

	addr1, addr2 := n.NameServerAddr(1), n.NameServerAddr(2)
	for i, a := range map[int]string{1: addr1, 2: addr2} {
		ap, err := netip.ParseAddrPort(a)
		if err != nil || ap.Addr() != netip.AddrFrom4([4]byte{127, 0, 1, byte(20 + i)}) || ap.Port() == 0 {
			t.Fatalf("ns-%d listens on %q, want 127.0.1.%d with a port", i, a, 20+i)
		}
	}
	if a := n.NameServerAddr(3); a != "" {
		t.Errorf("ns-3 is not hosted here but has address %q", a)
	}

	eventually(t, 10*time.Second, "ns-2 answers the zone", func() (bool, string) {
		got, err := query(addr2, "www.budget.vigil.test")
		return err == nil && len(got) == 1, "no answer yet"
	})
	time.Sleep(1100 * time.Millisecond) // ns-2's budget saves its one token again
	c := &dns.Client{Timeout: 100 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion("www.budget.vigil.test.", dns.TypeA)
	answered := 0
	t0 := time.Now()
	for range 10 {
		if _, _, err := c.Exchange(m, addr1); err == nil {
			answered++
		}
	}
	// 1 token saved plus 1 a second over the queries' time (unanswered ones wait 100ms each,
	// about a second in all).
	if most := 2 + int(time.Since(t0).Seconds()); answered > most {
		t.Errorf("ns-1 with a budget of 1 q/s answered %d of 10 queries in %v", answered, time.Since(t0))
	}
	if got, err := query(addr2, "www.budget.vigil.test"); err != nil || len(got) != 1 {
		t.Errorf("ns-2 after ns-1's budget was spent: %v %v", got, err)
	}
}

// Config.RRL reaches the location's DNS server: with 2 responses a second per client network
// and slip 1, a burst of queries from loopback gets at most a few full answers and the rest
// empty truncated ones, which tell a real client to retry over TCP.
func TestRRLConfigured(t *testing.T) {
	doc, err := config.Decode([]byte(`
regions: [us-east]
zones:
  - name: rrl.vigil.test
    record_sets:
      - {name: www, type: A, records: [{value: 192.0.2.8}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "rrl", "us-east", RoleLocation, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.HTTPAddr, cfg.DNSAddr, cfg.Static = "off", "127.0.0.1:0", doc
	cfg.RRL = location.RRLConfig{ResponsesPerSecond: 2, Slip: 1}
	cfg.Logger, cfg.Registerer = testLogger(), newReg()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, n)
	eventually(t, 10*time.Second, "the location answers", func() (bool, string) {
		got, err := query(n.DNSAddr(), "www.rrl.vigil.test")
		return err == nil && len(got) == 1, "no answer yet"
	})
	c := &dns.Client{Timeout: time.Second}
	m := new(dns.Msg)
	m.SetQuestion("www.rrl.vigil.test.", dns.TypeA)
	full, truncated := 0, 0
	t0 := time.Now()
	for range 40 {
		r, _, err := c.Exchange(m, n.DNSAddr())
		switch {
		case err != nil:
		case r.Truncated && len(r.Answer) == 0:
			truncated++
		case len(r.Answer) == 1:
			full++
		}
	}
	if most := 4 + 2*int(time.Since(t0).Seconds()); full > most || truncated == 0 {
		t.Errorf("with RRL at 2/s: %d full answers (at most %d) and %d truncated of 40 in %v", full, most, truncated, time.Since(t0))
	}
}
