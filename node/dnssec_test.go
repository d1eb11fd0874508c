package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/location/unboundtest"
)

// The demo zone signed end to end: the control voter generates its keys when the document
// enables signing, the location receives them sealed through the Watcher and signs, and
// Debian's unbound, trusting only the DS the API gives for the parent, validates every answer
// the location gives: the failover record set before and after its primary fails (a real
// probe of a real target), the other policies, a name that does not exist and a type a name
// lacks.
func TestSignedDemoZoneValidatesInUnbound(t *testing.T) {
	if unboundtest.Binary() == "" {
		t.Skip("unbound is not installed (apt-get install -y unbound)")
	}
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	for i := range doc.Checks {
		if doc.Checks[i].Protocol != config.ProtocolCalculated {
			doc.Checks[i].CheckersPerRegion = 1
		}
	}
	doc.Quorum.FreshnessWindow = config.Duration(time.Second)
	z := &doc.Zones[0]
	z.TTL, z.SOA.Minimum = 1, 1
	z.DNSSEC = &config.DNSSEC{Enabled: true, Keys: "split", DNSKEYTTL: 1}

	if err := doc.Validate(); err != nil {
		t.Fatal(err)
	}
	_, api := startVoter(t, doc, func(vc *Config) {
		vc.DNSSECSecret = testKey // the data node's default: its first gossip key
	})
	var view control.DNSSECView
	eventually(t, 10*time.Second, "the zone's keys and DS", func() (bool, string) {
		req, _ := http.NewRequest(http.MethodGet, api+"/v1/zones/demo.vigil.test/dnssec", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var body struct{ Data control.DNSSECView }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return false, err.Error()
		}
		view = body.Data
		return len(view.DS) == 1 && len(view.Keys) == 2, fmt.Sprintf("%+v", view)
	})

	a := start(t, mustNew(t, dataNode(t, "a", "us-east", t.TempDir(), []string{api})))
	eventually(t, 15*time.Second, "the location signs the zone", func() (bool, string) {
		m := new(dns.Msg)
		m.SetQuestion("demo.vigil.test.", dns.TypeDNSKEY)
		m.SetEdns0(1232, true)
		r, err := dns.Exchange(m, a.DNSAddr())
		if err != nil {
			return false, err.Error()
		}
		return len(r.Answer) == 3, r.String()
	})
	u := unboundtest.Start(t, "demo.vigil.test.", a.DNSAddr(), view.DS[0])

	www := func(want string) {
		t.Helper()
		eventually(t, 15*time.Second, "www answers "+want+", validated", func() (bool, string) {
			r := u.Ask(t, "www.demo.vigil.test.", dns.TypeA)
			got := unboundtest.Addrs(r)
			return r.AuthenticatedData && slices.Equal(got, []string{want}), r.String()
		})
	}
	www("192.0.2.1")
	for _, name := range []string{"api", "all", "static"} {
		unboundtest.Secure(t, name, u.Ask(t, name+".demo.vigil.test.", dns.TypeA))
	}
	r := u.Ask(t, "nothing-here.demo.vigil.test.", dns.TypeA)
	unboundtest.Secure(t, "a name that does not exist", r)
	if len(r.Answer) != 0 {
		t.Fatalf("a name that does not exist answered: %v", r)
	}
	r = u.Ask(t, "www.demo.vigil.test.", dns.TypeAAAA)
	unboundtest.Secure(t, "a type the name lacks", r)
	if len(r.Answer) != 0 {
		t.Fatalf("a type the name lacks answered: %v", r)
	}

	targets["us-east"].down.Store(true)
	www("198.51.100.1")
	targets["us-east"].down.Store(false)
	www("192.0.2.1")
}
