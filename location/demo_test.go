package location

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// TestDemoZone serves the demo configuration (examples/demo.yaml) as `vigil dev` would, with
// a shard of four virtual name servers, and checks its failover record set against verdicts.
func TestDemoZone(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "examples", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := config.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := NewSnapshot(doc.Zones, map[string][]NameServer{
		"demo.vigil.test.": ShardNameServers([]int{3, 97, 1024, 2047}, doc.NameServers.Domain, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{})
	s.SetSnapshot(snap)
	ask := func(name string, qtype uint16) *dns.Msg {
		return exchange(t, "udp", s.Addr(), query(name, qtype, 1232))
	}
	if v := values(ask("www.demo.vigil.test.", dns.TypeA)); !slices.Equal(v, []string{"192.0.2.1"}) {
		t.Errorf("www, all healthy: %v", v)
	}
	s.SetVerdicts(map[string]bool{"web-us-east": false})
	if v := values(ask("www.demo.vigil.test.", dns.TypeA)); !slices.Equal(v, []string{"198.51.100.1"}) {
		t.Errorf("www, us-east down: %v", v)
	}
	if r := ask("demo.vigil.test.", dns.TypeNS); len(r.Answer) != 4 || r.Answer[3].(*dns.NS).Ns != "ns-2047.ns.vigil.test." {
		t.Errorf("NS: %v", r.Answer)
	}
	if v := values(ask("demo.vigil.test.", dns.TypeTXT)); !slices.Equal(v, []string{"v=vigil demo zone"}) {
		t.Errorf("TXT at the apex: %v", v)
	}
}
