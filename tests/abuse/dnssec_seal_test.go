package abuse

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// sealVoter is a voter (`vigil agent -roles control` with TLS and tokens) serving the demo
// document with its zone signed, keys sealed with secret.
type sealVoter struct {
	base string
	ds   []string
}

// startSealVoter starts a voter whose DNSSEC secret is secret and writes the demo document
// with demo.vigil.test signed; it returns once the zone's keys and DS are published.
func startSealVoter(t *testing.T, p pkiSet, id string, secret []byte, client *http.Client) sealVoter {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = id, agent.RoleControl, t.TempDir(), "off"
	cfg.TLS = p.store(t, p.dir, id)
	cfg.Control.RaftAddr, cfg.Control.APIAddr, cfg.Control.Bootstrap = "127.0.0.1:0", "127.0.0.1:0", true
	cfg.Control.WriteTokens, cfg.Control.ReadTokens = []string{writeToken}, []string{readToken}
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	cfg.DNSSECSecret = secret
	cfg.Logger = logger()
	v := runNode(t, cfg)
	base := v.Self().ControlAPI
	doc := signedDemo(t)
	if !waitFor(15*time.Second, func() bool {
		code, _ := send(t, client, base, writeReq{"PUT", "/v1/document", "application/yaml", doc}, bearerOf(writeToken))
		return code == http.StatusOK
	}) {
		t.Fatal("the write token does not write the signed demo document")
	}
	var view state.DNSSECView
	if !waitFor(15*time.Second, func() bool {
		code, body := send(t, client, base, writeReq{"GET", "/v1/zones/demo.vigil.test./dnssec", "", ""}, bearerOf(readToken))
		var r struct{ Data state.DNSSECView }
		if code != http.StatusOK || json.Unmarshal(body, &r) != nil {
			return false
		}
		view = r.Data
		return len(view.DS) > 0
	}) {
		t.Fatal("the voter publishes no DS for the signed zone")
	}
	return sealVoter{base: base, ds: view.DS}
}

// signedDemo returns examples/demo.yaml with its zone signed.
func signedDemo(t *testing.T) string {
	t.Helper()
	demo, err := os.ReadFile("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const at = "  - name: demo.vigil.test\n"
	if !strings.Contains(string(demo), at) {
		t.Fatal("examples/demo.yaml: no zone demo.vigil.test")
	}
	return strings.Replace(string(demo), at, at+"    dnssec: {enabled: true, keys: combined}\n", 1)
}

func bearerOf(tok string) func(*http.Request) {
	return func(r *http.Request) {
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	}
}

// sealedKeys returns every zone's keys found anywhere in the JSON document b: each object
// with a "zone" and a "keys" list whose keys carry a sealed private half.
func sealedKeys(b []byte) []dnssec.ZoneKeys {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	var out []dnssec.ZoneKeys
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["zone"].(string); ok {
				if _, ok := x["keys"].([]any); ok {
					raw, _ := json.Marshal(x)
					var zk dnssec.ZoneKeys
					if json.Unmarshal(raw, &zk) == nil {
						for _, k := range zk.Keys {
							if len(k.Sealed) > 0 {
								out = append(out, zk)
								break
							}
						}
					}
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// unseal is the attacker's own opening of a sealed key with a guessed secret, from the
// published scheme (HKDF-SHA256 of the secret, AES-256-GCM, the zone and tag as data): the
// private key, or nil when it does not open.
func unseal(secret []byte, apex string, k dnssec.Key) *ecdsa.PrivateKey {
	key, err := hkdf.Key(sha256.New, secret, nil, "vigil dnssec seal key v1", 32)
	if err != nil {
		return nil
	}
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	n := aead.NonceSize()
	if len(k.Sealed) < n+aead.Overhead() {
		return nil
	}
	raw, err := aead.Open(nil, k.Sealed[:n], k.Sealed[n:], []byte(apex+"/"+strconv.Itoa(int(k.Tag))))
	if err != nil {
		return nil
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
	if err != nil {
		return nil
	}
	return priv
}

// forgeSigned signs a TXT record of the attacker's at the zone's apex with priv, as key k, and
// reports whether the signature validates with k's DNSKEY whose DS is one the voter publishes
// for the parent: a validator would accept the forged answer.
func forgeSigned(t *testing.T, apex string, k dnssec.Key, priv *ecdsa.PrivateKey, ds []string) bool {
	t.Helper()
	dk := k.DNSKEY(apex, 3600)
	trusted := false
	for _, s := range ds {
		rr, err := dns.NewRR(s)
		if err == nil && strings.EqualFold(rr.(*dns.DS).Digest, dk.ToDS(dns.SHA256).Digest) {
			trusted = true
		}
	}
	txt := &dns.TXT{Hdr: dns.RR_Header{Name: "forged." + apex, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{"signed by the attacker"}}
	now := uint32(time.Now().Unix())
	sig := &dns.RRSIG{Hdr: dns.RR_Header{Name: txt.Hdr.Name, Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: 60},
		TypeCovered: dns.TypeTXT, Algorithm: dk.Algorithm, Labels: uint8(dns.CountLabel(txt.Hdr.Name)), OrigTtl: 60,
		Expiration: now + 3600, Inception: now - 60, KeyTag: dk.KeyTag(), SignerName: apex}
	if err := sig.Sign(priv, []dns.RR{txt}); err != nil {
		t.Logf("sign: %v", err)
		return false
	}
	return trusted && sig.Verify(dk, []dns.RR{txt}) == nil
}

// TestAbuseCheckerUnsealsKeys: a voter (TLS, tokens) signs the demo zone with its keys sealed
// by its own DNSSEC secret (-dnssec-secret-file); a checker follows it with its certificate
// (role checker) and the pool's gossip key. The attacker holds what a checker holds: the
// gossip key, the checker's certificate and a read token. It reads /v1/state and
// /v1/changes?index=0 with each credential and the checker's own config.json, takes every
// sealed key found and tries to open it with the gossip key. A checker's certificate reads
// the keys without their sealed halves; the read token (which a location may use too) reads
// them sealed. The control: a voter with the
// setup of older builds, the gossip key as the DNSSEC secret; the same attacker opens its
// key and signs a record that validates with the zone's DNSKEY, whose DS the voter publishes.
func TestAbuseCheckerUnsealsKeys(t *testing.T) {
	p := newPKI(t)
	gossipKey := make([]byte, 32)
	secret := make([]byte, 32)
	rand.Read(gossipKey)
	rand.Read(secret)
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(p.dir, "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA", err)
	}
	tokenClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	checkerClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: p.store(t, p.dir, "checker").ClientConfig(tlsconf.Peer{})}}

	// attack reads everything the checker's credentials read from the voter at base (and the
	// checker's data directory, when dir is set) and counts the sealed keys found, opened
	// with the gossip key, and forged signatures that validate.
	// checkerFound counts the sealed keys found through the checker's certificate and
	// config.json alone.
	attack := func(v sealVoter, dir string) (reads, found, checkerFound, opened, forged int) {
		var docs [][]byte
		var byChecker []bool
		for _, c := range []struct {
			c       *http.Client
			cred    func(*http.Request)
			checker bool
		}{{checkerClient, bearerOf(""), true}, {tokenClient, bearerOf(readToken), false}} {
			for _, path := range []string{"/v1/state", "/v1/changes?index=0", "/v1/document"} {
				code, body := send(t, c.c, v.base, writeReq{"GET", path, "", ""}, c.cred)
				if code != http.StatusOK {
					t.Errorf("GET %s: %d %s", path, code, body)
				}
				reads++
				docs, byChecker = append(docs, body), append(byChecker, c.checker)
			}
		}
		if dir != "" {
			b, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatalf("the checker keeps no configuration copy: %v", err)
			}
			reads++
			docs, byChecker = append(docs, b), append(byChecker, true)
		}
		for i, b := range docs {
			for _, zk := range sealedKeys(b) {
				for _, k := range zk.Keys {
					found++
					if byChecker[i] {
						checkerFound++
					}
					if priv := unseal(gossipKey, zk.Zone, k); priv != nil {
						opened++
						if forgeSigned(t, zk.Zone, k, priv, v.ds) {
							forged++
						}
					}
				}
			}
		}
		return reads, found, checkerFound, opened, forged
	}

	v := startSealVoter(t, p, "v0", secret, tokenClient)
	// The checker follows the voter with its certificate and keeps its copy.
	dir := t.TempDir()
	cc := agent.DefaultConfig()
	cc.ID, cc.Region, cc.Roles, cc.DataDir = "checker", "us-east", agent.RoleChecker, dir
	cc.Voters, cc.TLS = []string{v.base}, p.store(t, p.dir, "checker")
	cc.Gossip.Bind, cc.Gossip.Keys = "127.0.0.1:0", [][]byte{gossipKey}
	cc.HTTPAddr, cc.Probe.AllowLoopback = "off", true
	cc.Logger = logger()
	ch := runNode(t, cc)
	if !waitFor(15*time.Second, func() bool { return ch.ConfigInfo().Zones == 1 }) {
		t.Fatalf("the checker does not follow the voter: %+v", ch.ConfigInfo())
	}
	// A checker given the secret is refused at start: only voters and locations hold it.
	bad := cc
	bad.ID, bad.DataDir, bad.DNSSECSecret = "checker-2", t.TempDir(), secret
	_, refusedErr := agent.New(bad)

	reads, found, checkerFound, opened, forged := attack(v, dir)

	// The control: the gossip key seals, as in builds before the secret had its own flag.
	old := startSealVoter(t, p, "v1", gossipKey, tokenClient)
	oreads, ofound, _, oopened, oforged := attack(old, "")

	row(t, "a checker's credentials (certificate with role checker, a read token) and the gossip key against a voter signing a zone with its own -dnssec-secret-file: every sealed key read from /v1/state, /v1/changes?index=0 and /v1/document with each credential and from the checker's config.json, opened with the gossip key and used to sign a record",
		plural(reads, "read")+", "+plural(found, "sealed key")+" found (all through the read token: "+itoa(checkerFound)+" through the checker's certificate and config.json)",
		itoa(opened)+" opened, "+itoa(forged)+" forged signatures validate; a checker started with the secret is refused ("+strconv.FormatBool(refusedErr != nil)+"); control (gossip key as the secret, older builds): "+itoa(oopened)+" of "+itoa(ofound)+" keys opened in "+plural(oreads, "read")+", "+itoa(oforged)+" forged signatures validate with the published DS")
	if found == 0 {
		t.Errorf("no sealed key found in %d reads: the attack looked at nothing", reads)
	}
	if checkerFound != 0 {
		t.Errorf("the checker's certificate and config.json carry %d sealed keys", checkerFound)
	}
	if opened != 0 || forged != 0 {
		t.Errorf("the checker's credentials opened %d keys, forged %d signatures", opened, forged)
	}
	if refusedErr == nil {
		t.Error("a checker-only node started with the DNSSEC secret")
	}
	if oopened == 0 || oforged == 0 {
		t.Errorf("control: the gossip key opened %d of %d keys, forged %d: the attack cannot succeed", oopened, ofound, oforged)
	}
}

// TestAbuseVoterWithoutSecretRefusesSigning: a voter started without a DNSSEC secret refuses
// a document (and a zone) that enables signing with 422 and the flag to give; the zone stays
// as it was. The control: the same writes to a voter with the secret are accepted and its
// zone gets keys.
func TestAbuseVoterWithoutSecretRefusesSigning(t *testing.T) {
	p := newPKI(t)
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(p.dir, "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA", err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = "v0", agent.RoleControl, t.TempDir(), "off"
	cfg.TLS = p.store(t, p.dir, "v0")
	cfg.Control.RaftAddr, cfg.Control.APIAddr, cfg.Control.Bootstrap = "127.0.0.1:0", "127.0.0.1:0", true
	cfg.Control.WriteTokens, cfg.Control.ReadTokens = []string{writeToken}, []string{readToken}
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	cfg.Logger = logger()
	v := runNode(t, cfg)
	base := v.Self().ControlAPI
	doc := signedDemo(t)
	var code int
	var body []byte
	if !waitFor(15*time.Second, func() bool {
		code, body = send(t, client, base, writeReq{"PUT", "/v1/document", "application/yaml", doc}, bearerOf(writeToken))
		return code != http.StatusServiceUnavailable
	}) {
		t.Fatal("the voter never answered the write")
	}
	zoneCode, zoneBody := send(t, client, base, writeReq{"PUT", "/v1/zones/signed.test.", "application/json",
		`{"name": "signed.test.", "dnssec": {"enabled": true}, "soa": {"mname": "ns1.signed.test.", "rname": "hostmaster.signed.test."}}`}, bearerOf(writeToken))
	zc, _ := send(t, client, base, writeReq{"GET", "/v1/zones/demo.vigil.test.", "", ""}, bearerOf(readToken))

	// The control: the same document to a voter with the secret.
	secret := make([]byte, 32)
	rand.Read(secret)
	good := startSealVoter(t, p, "v1", secret, client)

	row(t, "a signed zone written to a voter started without -dnssec-secret-file: PUT /v1/document of the demo with dnssec enabled, PUT /v1/zones of a new signed zone",
		"2 writes",
		"refused "+itoa(code)+" and "+itoa(zoneCode)+", the reason names -dnssec-secret-file; the zone was not created (GET "+itoa(zc)+"); control: a voter with the secret accepts the document and publishes "+plural(len(good.ds), "DS record"))
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "-dnssec-secret-file") {
		t.Errorf("PUT /v1/document with a signed zone: %d %s, want 422 naming -dnssec-secret-file", code, body)
	}
	if zoneCode != http.StatusUnprocessableEntity || !strings.Contains(string(zoneBody), "-dnssec-secret-file") {
		t.Errorf("PUT a signed zone: %d %s, want 422 naming -dnssec-secret-file", zoneCode, zoneBody)
	}
	if zc != http.StatusNotFound {
		t.Errorf("the refused document's zone: GET %d, want 404", zc)
	}
}
