package dnssec

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func testSealer(t testing.TB, secret string) *Sealer {
	t.Helper()
	s, err := NewSealer([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A generated key round-trips through its stored form (JSON, as raft holds it) and signs:
// the signature verifies with the key's DNSKEY, and the stored form holds no private key in
// clear.
func TestKeysSignAndVerify(t *testing.T) {
	sealer := testSealer(t, "0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	for _, scheme := range []string{SchemeCombined, SchemeSplit} {
		zk, err := InitialKeys("Example.Test", scheme, sealer, now.Unix())
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := json.Marshal(zk)
		var back ZoneKeys
		if err := json.Unmarshal(stored, &back); err != nil {
			t.Fatal(err)
		}
		sg, err := NewSigner(&back, sealer, SignerConfig{DNSKEYTTL: 300})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range sg.keys {
			raw, _ := k.priv.Bytes()
			if bytes.Contains(stored, raw) {
				t.Fatalf("%s: the stored keys hold a private key in clear", scheme)
			}
		}
		keys := sg.AppendDNSKEYs(nil, now)
		if len(keys) != map[string]int{SchemeCombined: 1, SchemeSplit: 2}[scheme] {
			t.Fatalf("%s: %d DNSKEYs", scheme, len(keys))
		}
		a, _ := dns.NewRR("www.example.test. 60 IN A 192.0.2.1")
		sigs, err := sg.AppendSignatures(nil, []dns.RR{a}, now, nil)
		if err != nil || len(sigs) != 1 {
			t.Fatalf("%s: signatures %v, %v", scheme, sigs, err)
		}
		verify(t, keys, sigs[0].(*dns.RRSIG), []dns.RR{a}, now)
		ksigs, _ := sg.AppendSignatures(nil, keys, now, nil)
		if len(ksigs) != 1 || ksigs[0].(*dns.RRSIG).KeyTag == sigs[0].(*dns.RRSIG).KeyTag && scheme == SchemeSplit {
			t.Fatalf("%s: DNSKEY signed by %v", scheme, ksigs)
		}
		verify(t, keys, ksigs[0].(*dns.RRSIG), keys, now)
		again, _ := sg.AppendSignatures(nil, []dns.RR{a}, now.Add(time.Minute), nil)
		if again[0] != sigs[0] {
			t.Errorf("%s: the second signature of the same set did not come from the cache", scheme)
		}
	}
}

func verify(t *testing.T, keys []dns.RR, sig *dns.RRSIG, rrset []dns.RR, now time.Time) {
	t.Helper()
	for _, k := range keys {
		dk := k.(*dns.DNSKEY)
		if dk.KeyTag() != sig.KeyTag {
			continue
		}
		if err := sig.Verify(dk, rrset); err != nil {
			t.Fatalf("verify %s: %v", sig, err)
		}
		if !sig.ValidityPeriod(now) {
			t.Fatalf("signature not valid at %v: %s", now, sig)
		}
		return
	}
	t.Fatalf("no DNSKEY of tag %d", sig.KeyTag)
}

// A sealed key opens only with its secret, for its own zone and tag.
func TestSealBindsSecretZoneAndTag(t *testing.T) {
	a := testSealer(t, "secret-number-one-0123456789")
	zk, err := InitialKeys("example.test.", SchemeCombined, a, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSigner(zk, testSealer(t, "secret-number-two-0123456789"), SignerConfig{}); err == nil {
		t.Error("opened with another secret")
	}
	moved := *zk
	moved.Zone = "other.test."
	if _, err := NewSigner(&moved, a, SignerConfig{}); err == nil {
		t.Error("opened as another zone's key")
	}
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Error("a 5-byte secret was taken")
	}
}

// The cache holds at most its size, whatever is signed.
func TestSignatureCacheBounded(t *testing.T) {
	sealer := testSealer(t, "0123456789abcdef0123456789abcdef")
	zk, _ := InitialKeys("example.test.", SchemeCombined, sealer, 0)
	sg, err := NewSigner(zk, sealer, SignerConfig{CacheSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	for i := range 1000 {
		rr := &dns.A{Hdr: dns.RR_Header{Name: "www.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
			A: []byte{10, 0, byte(i >> 8), byte(i)}}
		if _, err := sg.AppendSignatures(nil, []dns.RR{rr}, now, nil); err != nil {
			t.Fatal(err)
		}
	}
	if signed, _, _, size := sg.Stats(); size > 100 || signed != 1000 {
		t.Fatalf("signed %d, cache %d entries (bound 100)", signed, size)
	}
}

// A ZSK rollover publishes the new key before it signs and keeps the old one published until
// its signatures have expired; at every second of it some published key signs each set and
// every signing key is published.
func TestZSKRolloverTimeline(t *testing.T) {
	sealer := testSealer(t, "0123456789abcdef0123456789abcdef")
	zk, _ := InitialKeys("example.test.", SchemeSplit, sealer, 0)
	tm := Timing{DNSKEYTTL: 10, MaxTTL: 20, Margin: 5}
	next, err := Rollover(zk, RoleZSK, sealer, 100, tm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rollover(next, RoleZSK, sealer, 101, tm); err == nil {
		t.Error("a second ZSK rollover started while one is in progress")
	}
	oldZ, newZ := next.Keys[1], next.Keys[2]
	if newZ.Activate != 115 || oldZ.Retire != 115 || oldZ.Remove != 140 {
		t.Fatalf("timeline: new %+v old %+v", newZ, oldZ)
	}
	for now := int64(100); now < 200; now++ {
		signing := 0
		for _, k := range next.Keys {
			if k.Role == RoleZSK && k.Signing(now) {
				signing++
			}
		}
		if signing != 1 {
			t.Fatalf("at %d: %d ZSKs sign", now, signing)
		}
		if now < 115+10 && !oldZ.Published(now) {
			t.Fatalf("at %d the old ZSK is gone while DNSKEY sets without the new one may be cached", now)
		}
	}
	if _, err := Rollover(next, RoleZSK, sealer, 140, tm); err != nil {
		t.Errorf("rollover after the previous one ended: %v", err)
	}
	csk, _ := InitialKeys("example.test.", SchemeCombined, sealer, 0)
	two, err := Rollover(csk, RoleCSK, sealer, 50, tm)
	if err != nil || len(two.Keys) != 2 || !two.Keys[1].Signing(50) || !two.Keys[0].Signing(50) {
		t.Fatalf("CSK rollover: %+v %v", two, err)
	}
	done, err := FinishRollover(two, RoleCSK, 85, tm, false)
	if err != nil || done.Keys[0].Signing(85) || !done.Keys[0].Published(85) || done.Keys[0].Published(85+20+5) {
		t.Fatalf("finish: %+v %v", done, err)
	}
}

// A KSK or CSK rollover cannot be finished before the new key's DNSKEY and the old DS can
// have expired from caches (DNSKEY TTL + largest TTL + margin after its start), unless
// forced; a TTL raised during the rollover moves the earliest finish later, a lowered one
// does not move it earlier.
func TestFinishRolloverWaits(t *testing.T) {
	sealer := testSealer(t, "0123456789abcdef0123456789abcdef")
	tm := Timing{DNSKEYTTL: 10, MaxTTL: 20, Margin: 5}
	for _, scheme := range []struct {
		name string
		role Role
	}{{SchemeCombined, RoleCSK}, {SchemeSplit, RoleKSK}} {
		zk, _ := InitialKeys("example.test.", scheme.name, sealer, 0)
		two, err := Rollover(zk, scheme.role, sealer, 50, tm)
		if err != nil {
			t.Fatal(err)
		}
		if got := two.Keys[len(two.Keys)-1].FinishAfter; got != 85 {
			t.Fatalf("%s: FinishAfter %d, want 85", scheme.role, got)
		}
		for _, now := range []int64{50, 51, 84} {
			_, err := FinishRollover(two, scheme.role, now, tm, false)
			var early *TooEarlyError
			if !errors.As(err, &early) || early.Started != 50 || early.Earliest != 85 || early.Now != now {
				t.Fatalf("%s finish at %d: %v, want too early (started 50, earliest 85)", scheme.role, now, err)
			}
			if !strings.Contains(err.Error(), "1970-01-01T00:01:25Z") {
				t.Errorf("the message does not say when: %v", err)
			}
		}
		if _, err := FinishRollover(two, scheme.role, 51, tm, true); err != nil {
			t.Errorf("%s forced finish: %v", scheme.role, err)
		}
		if _, err := FinishRollover(two, scheme.role, 85, tm, false); err != nil {
			t.Errorf("%s finish at 85: %v", scheme.role, err)
		}
		longer := Timing{DNSKEYTTL: 10, MaxTTL: 100, Margin: 5}
		if _, early := FinishTime(two, scheme.role, longer); early != 165 {
			t.Errorf("%s with a larger TTL: earliest %d, want 165", scheme.role, early)
		}
		shorter := Timing{DNSKEYTTL: 1, MaxTTL: 1, Margin: 0}
		if _, early := FinishTime(two, scheme.role, shorter); early != 85 {
			t.Errorf("%s with smaller TTLs: earliest %d, want 85 (as at the start)", scheme.role, early)
		}
	}
}

// A sealer with older secrets opens keys sealed with any of them and seals with the first:
// the way off one secret onto another.
func TestSealerOpensWithOlderSecrets(t *testing.T) {
	oldSecret, newSecret := []byte("the-old-secret-0123456789abcdef"), []byte("the-new-secret-0123456789abcdef")
	old := testSealer(t, string(oldSecret))
	zk, err := InitialKeys("example.test.", SchemeCombined, old, 1)
	if err != nil {
		t.Fatal(err)
	}
	both, err := NewSealer(newSecret, oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSigner(zk, both, SignerConfig{}); err != nil || !both.Opens(zk) {
		t.Fatalf("the older secret does not open: %v", err)
	}
	fresh, err := InitialKeys("example.test.", SchemeCombined, both, 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Opens(fresh) || !testSealer(t, string(newSecret)).Opens(fresh) {
		t.Error("a sealer with older secrets does not seal with its first")
	}
	if testSealer(t, string(newSecret)).Opens(zk) {
		t.Error("the new secret alone opens a key of the old one")
	}
	if _, err := NewSealer(newSecret, []byte("short")); err == nil {
		t.Error("a short older secret was taken")
	}
}

// A record set signed once is found again by the identity of its records (no canonical form,
// no hash) and, as a copy of the same content, by content; a changed record is signed anew.
func TestSignatureCacheByIdentity(t *testing.T) {
	sealer, err := NewSealer([]byte("dnssec-test-seal-secret-00000000"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	zk, err := InitialKeys("example.test.", SchemeCombined, sealer, now.Unix())
	if err != nil {
		t.Fatal(err)
	}
	sg, err := NewSigner(zk, sealer, SignerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := dns.NewRR("www.example.test. 60 IN A 192.0.2.1")
	set := []dns.RR{a}
	first, err := sg.AppendSignatures(nil, set, now, nil)
	if err != nil || len(first) != 1 {
		t.Fatalf("sign: %v %v", first, err)
	}
	if k, _ := makeRefKey(set, zk.Keys[0].Tag); sg.cache.getRef(k).rrsig != first[0] {
		t.Fatal("the signature is not kept by the identity of its records")
	}
	again, _ := sg.AppendSignatures(nil, set, now, nil)
	same, _ := sg.AppendSignatures(nil, []dns.RR{dns.Copy(a)}, now, nil)
	if again[0] != first[0] || same[0] != first[0] {
		t.Fatal("the same records, or a copy of them, were signed anew")
	}
	changed := dns.Copy(a).(*dns.A)
	changed.A = []byte{192, 0, 2, 2}
	other, _ := sg.AppendSignatures(nil, []dns.RR{changed}, now, nil)
	if other[0] == first[0] {
		t.Fatal("a changed record got the old signature")
	}
	if signed, cached, _, _ := sg.Stats(); signed != 2 || cached != 2 {
		t.Fatalf("signed %d, cached %d: want 2 and 2", signed, cached)
	}
}

// A packed signature packs into a message as its RRSIG does, byte for byte; a wildcard's
// signature appended under the name it was expanded to counts the wildcard's labels and
// verifies over the expanded records (RFC 4035 §5.3.2), from the cache after the first.
func TestPackedAndWildcardSignatures(t *testing.T) {
	sealer := testSealer(t, "dnssec-test-seal-secret-00000000")
	now := time.Now()
	zk, err := InitialKeys("example.test.", SchemeCombined, sealer, now.Unix())
	if err != nil {
		t.Fatal(err)
	}
	sg, err := NewSigner(zk, sealer, SignerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	keys := sg.AppendDNSKEYs(nil, now)
	wild, _ := dns.NewRR("*.w.example.test. 60 IN A 192.0.2.1")
	set := []dns.RR{wild}
	plain, err := sg.AppendSignatures(nil, set, now, nil)
	if err != nil || len(plain) != 1 {
		t.Fatalf("sign: %v %v", plain, err)
	}
	for _, owner := range []string{"a.w.example.test.", "b.c.w.example.test."} {
		expanded := dns.Copy(wild)
		expanded.Header().Name = owner
		packed, err := sg.AppendSignaturesWith(nil, []dns.RR{expanded}, now, nil, SignOptions{Packed: true, Wildcard: "*.w.example.test."})
		if err != nil || len(packed) != 1 {
			t.Fatalf("sign %s: %v %v", owner, packed, err)
		}
		if _, ok := packed[0].(*dns.PrivateRR); !ok {
			t.Fatalf("%s: got %T, want the packed form", owner, packed[0])
		}
		want := *plain[0].(*dns.RRSIG)
		want.Hdr.Name = owner
		m := new(dns.Msg)
		m.SetQuestion(owner, dns.TypeA)
		m.Compress = true
		m.Answer = []dns.RR{expanded, packed[0]}
		got, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		m.Answer = []dns.RR{expanded, &want}
		ref, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, ref) {
			t.Fatalf("%s: the packed signature packs as\n%x\nwant\n%x", owner, got, ref)
		}
		var back dns.Msg
		if err := back.Unpack(got); err != nil {
			t.Fatal(err)
		}
		sig, ok := back.Answer[1].(*dns.RRSIG)
		if !ok || sig.Hdr.Name != owner || sig.Labels != 3 {
			t.Fatalf("%s: unpacked %v, want an RRSIG owned by it with 3 labels", owner, back.Answer[1])
		}
		verify(t, keys, sig, back.Answer[:1], now)
	}
	if signed, cached, _, _ := sg.Stats(); signed != 1 || cached != 2 {
		t.Fatalf("signed %d, cached %d: want 1 and 2", signed, cached)
	}
}
