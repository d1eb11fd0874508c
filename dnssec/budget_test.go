package dnssec

import (
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Zone a floods (it asks for a new signature every millisecond, far beyond the budget) while
// zone b asks for 150 a second, under its share of 250 (a budget of 500 between two zones):
// b gets every one, a gets the rest of the budget, and the two together never exceed it.
// The control: without b asking, a alone gets the whole budget.
func TestBudgetFairBetweenZones(t *testing.T) {
	const rate = 500
	run := func(bAsks bool) (aGot, bGot, bAsked int) {
		bud := NewBudget(rate)
		bud.SetZones([]string{"a.test.", "b.test."})
		now := time.Unix(1_800_000_000, 0)
		for ms := range 10_000 { // ten seconds
			now = now.Add(time.Millisecond)
			for range 4 {
				if bud.Allow("a.test.", now) {
					aGot++
				}
			}
			if bAsks && ms%20 < 3 { // 150 a second, in bursts of 3
				bAsked++
				if bud.Allow("b.test.", now) {
					bGot++
				}
			}
		}
		return aGot, bGot, bAsked
	}
	aGot, bGot, bAsked := run(true)
	t.Logf("budget %d/s over 10 s: flooded zone a got %d, zone b got %d of %d", rate, aGot, bGot, bAsked)
	if bGot != bAsked {
		t.Errorf("zone b got %d of %d new signatures under its share, while zone a flooded", bGot, bAsked)
	}
	if total := aGot + bGot; total > rate*11 || aGot < rate*10-bAsked-rate/2 {
		t.Errorf("a %d + b %d: want at most the budget (%d) and a to get what b leaves", aGot, bGot, rate*11)
	}
	aAlone, _, _ := run(false)
	t.Logf("control: zone a alone got %d", aAlone)
	if aAlone < rate*10 || aAlone > rate*11 {
		t.Errorf("zone a alone got %d, want the whole budget (%d to %d)", aAlone, rate*10, rate*11)
	}
}

// Without shares (a fixed per-zone rate), the flood above would take all; the budget's share
// is what keeps zone b: check that a zone without a share (not in SetZones) is starved by
// the same flood, so that the test above can fail.
func TestBudgetWithoutShareIsStarved(t *testing.T) {
	bud := NewBudget(500)
	bud.SetZones([]string{"a.test."})
	now := time.Unix(1_800_000_000, 0)
	bGot, bAsked := 0, 0
	for ms := range 5_000 {
		now = now.Add(time.Millisecond)
		for range 4 {
			bud.Allow("a.test.", now)
		}
		if ms%20 == 0 {
			bAsked++
			if bud.Allow("b.test.", now) {
				bGot++
			}
		}
	}
	t.Logf("zone b without a share: %d of %d", bGot, bAsked)
	if bGot > bAsked/2 {
		t.Errorf("zone b without a share got %d of %d under a flood of zone a", bGot, bAsked)
	}
}

// What AppendSignatures signs verifies with the zone's DNSKEY (miekg/dns's RFC 4034 check):
// sets of several records of different lengths, upper-case owners and data names, a TTL
// that differs within the set, a wildcard owner.
func TestSignaturesVerify(t *testing.T) {
	sealer := testSealer(t, "0123456789abcdef0123456789abcdef")
	zk, _ := InitialKeys("Example.Test.", SchemeCombined, sealer, 0)
	sg, err := NewSigner(zk, sealer, SignerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	key := sg.AppendDNSKEYs(nil, now)[0].(*dns.DNSKEY)
	sets := [][]string{
		{"WWW.example.test. 60 IN A 192.0.2.1", "WWW.example.test. 60 IN A 192.0.2.10", "WWW.example.test. 60 IN A 10.0.0.1"},
		{"example.test. 300 IN NS NS1.Example.Test.", "example.test. 300 IN NS ns2.example.test."},
		{"caa.example.test. 60 IN CAA 0 issue \"a-long-value-that-sorts-by-data.example\"", "caa.example.test. 60 IN CAA 0 issue \"b\""},
		{"mx.example.test. 60 IN MX 10 Mail.Example.Test.", "mx.example.test. 120 IN MX 5 b.example.test."},
		{"*.w.example.test. 60 IN TXT \"x\""},
		{"r1.example.test. 60 IN NSEC \\000.r1.example.test. RRSIG NSEC NXNAME"},
	}
	for _, texts := range sets {
		var rrset []dns.RR
		for _, s := range texts {
			rr, err := dns.NewRR(s)
			if err != nil {
				t.Fatal(err)
			}
			rrset = append(rrset, rr)
		}
		for _, once := range []bool{false, true} {
			add := sg.AppendSignatures
			if once {
				add = sg.AppendSignaturesOnce
			}
			sigs, err := add(nil, rrset, now, nil)
			if err != nil || len(sigs) != 1 {
				t.Fatalf("%s: %d signatures, %v", texts[0], len(sigs), err)
			}
			sig := sigs[0].(*dns.RRSIG)
			// The verifier wants every record at the signature's TTL, as a resolver sees them.
			for _, rr := range rrset {
				rr.Header().Ttl = sig.OrigTtl
			}
			if err := sig.Verify(key, rrset); err != nil {
				t.Errorf("%s (once %v): %v", texts[0], once, err)
			}
		}
	}
}
