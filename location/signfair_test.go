package location

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// TestSignBudgetFairBetweenZones: two signed zones share a location's signing budget of 100
// new signatures a second. Zone a is flooded with new names (400 every tenth of a second,
// asked first), zone b asks for 3 new names every tenth of a second (30 a second, under its
// share of 50): every one of b's is answered and signed, a gets what is left, and the
// signatures made stay within the budget. The control: the same flood of a, b silent, gets
// the whole budget (so the flood alone would take b's share).
func TestSignBudgetFairBetweenZones(t *testing.T) {
	const rate, steps = 100, 30
	run := func(bAsks bool) (aGot, bGot, bAsked int, made uint64) {
		now := time.Unix(2_000_000, 0)
		var clock sync.Mutex
		s := startServer(t, Config{Registerer: prometheus.NewRegistry(), SignBudget: dnssec.NewBudget(rate), Now: func() time.Time {
			clock.Lock()
			defer clock.Unlock()
			return now
		}})
		sealer, err := dnssec.NewSealer([]byte("sign-fair-test-seal-secret-00000"))
		if err != nil {
			t.Fatal(err)
		}
		var zones []config.Zone
		signers := map[string]*dnssec.Signer{}
		for _, apex := range []string{"a.test.", "b.test."} {
			z := config.DefaultZone()
			z.Name = apex
			z.NameServers = []string{"ns.elsewhere.test."}
			z.RecordSets = []config.RecordSet{{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.1"}}}}
			zones = append(zones, z)
			zk, err := dnssec.InitialKeys(apex, dnssec.SchemeCombined, sealer, now.Unix())
			if err != nil {
				t.Fatal(err)
			}
			if signers[apex], err = dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{}); err != nil {
				t.Fatal(err)
			}
		}
		s.SetSnapshot(mustSnapshot(t, zones, nil))
		s.SetSigners(signers)
		ask := func(name string) bool {
			out := s.Respond(packed(t, doQuery(name, dns.TypeA, 1232)), Request{NameServer: -1})
			if out == nil {
				return false
			}
			var r dns.Msg
			if err := r.Unpack(out); err != nil {
				t.Fatal(err)
			}
			for _, rr := range r.Ns {
				if sig, ok := rr.(*dns.RRSIG); ok && sig.TypeCovered == dns.TypeNSEC {
					return true
				}
			}
			t.Fatalf("%s: answered without a signed NSEC:\n%v", name, &r)
			return false
		}
		for step := range steps {
			clock.Lock()
			now = now.Add(100 * time.Millisecond)
			clock.Unlock()
			for i := range 400 {
				if ask(fmt.Sprintf("r%d-%d.a.test.", step, i)) {
					aGot++
				}
			}
			for i := range 3 {
				if !bAsks {
					break
				}
				bAsked++
				if ask(fmt.Sprintf("r%d-%d.b.test.", step, i)) {
					bGot++
				}
			}
		}
		for _, sg := range signers {
			signed, _, _, _ := sg.Stats()
			made += signed
		}
		return aGot, bGot, bAsked, made
	}
	aGot, bGot, bAsked, made := run(true)
	t.Logf("budget %d/s over %d s: flooded zone a %d answered, zone b %d of %d; signatures made %d", rate, steps/10, aGot, bGot, bAsked, made)
	if bGot != bAsked {
		t.Errorf("zone b: %d of %d new names answered signed while zone a was flooded, want all (under its share)", bGot, bAsked)
	}
	if limit := uint64(rate*steps/10 + rate); made > limit {
		t.Errorf("%d signatures made, over the budget's %d", made, limit)
	}
	aAlone, _, _, _ := run(false)
	t.Logf("control, zone b silent: flooded zone a %d answered", aAlone)
	if aAlone < rate*steps/10 || aAlone <= aGot {
		t.Errorf("control: zone a alone got %d answers, want the whole budget (at least %d, more than the %d it got beside b)", aAlone, rate*steps/10, aGot)
	}
}
