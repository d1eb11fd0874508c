package location_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location"
)

// Example runs a location as `vigil agent --roles location` would: a server on loopback with
// one virtual name server, a zone whose shard holds it, and verdicts that fail its primary.
func Example() {
	s, err := location.New(location.Config{
		Addr:        "127.0.0.1:0",
		NameServers: map[int]string{17: "127.0.0.17:0"},
		Registerer:  prometheus.NewRegistry(),
	})
	if err != nil {
		log.Fatal(err)
	}
	doc, err := config.Decode([]byte(`
regions: [us-east, eu-west, sa-east]
zones:
  - name: demo.vigil.test
    record_sets:
      - name: www
        type: A
        policy: failover
        records:
          - {value: 192.0.2.1, health_check: web-us-east, role: primary}
          - {value: 198.51.100.1, health_check: web-eu-west, role: secondary}
`))
	if err != nil {
		log.Fatal(err)
	}
	snap, err := location.NewSnapshot(doc.Zones, map[string][]location.NameServer{
		"demo.vigil.test.": {
			{Index: 17, Name: "ns-17.ns.vigil.test.", Addr: netip.MustParseAddr("127.0.0.17")},
			{Index: 302, Name: "ns-302.ns.vigil.test."},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	s.SetSnapshot(snap)
	s.SetVerdicts(map[string]bool{"web-us-east": false, "web-eu-west": true})

	if err := s.Listen(); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx) }()

	c := &dns.Client{Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion("www.demo.vigil.test.", dns.TypeA)
	for _, addr := range []netip.AddrPort{s.Addr(), s.NameServerAddr(17)} {
		r, _, err := c.Exchange(m, addr.String())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(dns.RcodeToString[r.Rcode], r.Authoritative, r.Answer[0].(*dns.A).A)
	}
	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// NOERROR true 198.51.100.1
	// NOERROR true 198.51.100.1
}
