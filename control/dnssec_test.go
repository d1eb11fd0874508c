package control

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
)

// testDNSSECSecret is the DNSSEC seal secret of the test clusters' voters.
const testDNSSECSecret = "control-test-dnssec-secret-00000"

// A zone that opts in to signing gets its first keys from the leader, once; every voter
// holds them (sealed) through raft, snapshots and restarts; the API shows their public
// halves and DS, never a private key; a rollover goes through the API; deleting the zone
// drops its keys.
func TestZoneKeysGeneratedReplicatedAndRolled(t *testing.T) {
	c := newCluster(t, 3)
	base := c.leader(5 * time.Second).url()
	doc := strings.Replace(testDoc, "  - name: example.test.\n", "  - name: example.test.\n    dnssec: {enabled: true, keys: split, dnskey_ttl: 300, denial: nsec}\n", 1)
	if doc == testDoc {
		t.Fatal("testDoc changed shape")
	}
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", doc)

	var zk *dnssec.ZoneKeys
	waitFor(t, 10*time.Second, "every voter holds the zone's keys", func() bool {
		for _, v := range c.voters {
			k, ok := v.node.State().ZoneKeys("example.test")
			if !ok || len(k.Keys) != 2 {
				return false
			}
			zk = k
		}
		return true
	})
	sealer, _ := dnssec.NewSealer([]byte(testDNSSECSecret))
	if _, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{}); err != nil {
		t.Fatalf("the stored keys do not open with the voters' secret: %v", err)
	}

	f := c.follower()
	code, out := do(t, "GET", f.url()+"/v1/zones/example.test/dnssec", "", "", "")
	if code != http.StatusOK {
		t.Fatalf("GET dnssec: %d %s", code, out)
	}
	var view struct{ Data state.DNSSECView }
	if err := json.Unmarshal(out, &view); err != nil {
		t.Fatal(err)
	}
	if !view.Data.Enabled || view.Data.Denial != config.DenialNSEC || len(view.Data.Keys) != 2 || len(view.Data.DS) != 1 || !strings.Contains(view.Data.DS[0], " DS ") {
		t.Fatalf("view: %s", out)
	}
	for _, k := range zk.Keys {
		if bytes.Contains(out, []byte(base64.StdEncoding.EncodeToString(k.Sealed))) || bytes.Contains(out, []byte("sealed")) {
			t.Fatalf("the dnssec view holds a sealed key: %s", out)
		}
	}
	code, out = do(t, "GET", f.url()+"/v1/document", "", "", "")
	if code != http.StatusOK || bytes.Contains(out, []byte("sealed")) || bytes.Contains(out, []byte(zk.Keys[0].PublicKey)) {
		t.Fatalf("the document holds keys: %d %s", code, out)
	}

	// A ZSK rollover through a follower (forwarded), refused while one is in progress.
	mustWrite(t, "POST", f.url()+"/v1/zones/example.test/dnssec/rollover", "application/json", `{"role": "zsk"}`)
	code, out = do(t, "POST", base+"/v1/zones/example.test/dnssec/rollover", testToken, "application/json", `{"role": "zsk"}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(out), "in progress") {
		t.Fatalf("second rollover: %d %s", code, out)
	}
	waitFor(t, 5*time.Second, "the rollover reaches a follower", func() bool {
		k, _ := f.node.State().ZoneKeys("example.test")
		return len(k.Keys) == 3 && k.Keys[2].State(time.Now().Unix()) == "published"
	})

	// A snapshot and a restart keep the keys.
	l := c.leader(5 * time.Second)
	if err := l.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	for i, v := range c.voters {
		if v == l {
			c.stop(i)
			c.start(i)
			waitFor(t, 10*time.Second, "the restarted voter holds the keys", func() bool {
				k, ok := c.voters[i].node.State().ZoneKeys("example.test")
				return ok && len(k.Keys) == 3
			})
		}
	}

	base = c.leader(5 * time.Second).url()
	if code, out := do(t, "DELETE", base+"/v1/zones/example.test.", testToken, "", ""); code != http.StatusOK {
		t.Fatalf("delete zone: %d %s", code, out)
	}
	waitFor(t, 5*time.Second, "the keys are gone with the zone", func() bool {
		_, ok := c.leader(5 * time.Second).node.State().ZoneKeys("example.test")
		return !ok
	})
}

// A delta carries a zone's keys to a reader, and its JSON state round-trips them.
func TestZoneKeysDeltaAndJSON(t *testing.T) {
	s0 := state.NewState(mustDoc(t, testDoc))
	sealer, _ := dnssec.NewSealer([]byte(testDNSSECSecret))
	zk, err := dnssec.InitialKeys("example.test.", dnssec.SchemeCombined, sealer, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := state.ApplyCommand(s0, &state.Command{Op: state.OpPutZoneKeys, Create: true, ZoneKeys: zk}, 5)
	if err != nil {
		t.Fatal(err)
	}
	s1 := e.Next
	if _, err := state.ApplyCommand(s1, &state.Command{Op: state.OpPutZoneKeys, Create: true, ZoneKeys: zk}, 6); err == nil {
		t.Error("first keys were put twice")
	}
	keys := map[string]bool{}
	for _, k := range e.Keys() {
		keys[k] = true
	}
	d := s1.Delta(0, keys)
	got, err := s0.ApplyDelta(d)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := got.Next.ZoneKeys("example.test."); !ok || k.Keys[0].Tag != zk.Keys[0].Tag {
		t.Fatalf("delta: keys %v", k)
	}
	var buf bytes.Buffer
	if err := s1.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := state.ReadState(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := back.ZoneKeys("example.test."); !ok || !bytes.Equal(k.Keys[0].Sealed, zk.Keys[0].Sealed) {
		t.Fatalf("JSON: keys %v", k)
	}
}

// A state written for a reader that neither seals nor signs carries the zones' public keys
// without their sealed halves, in the whole state and in a delta; the state itself keeps them.
func TestWithoutSealedKeepsPublicHalves(t *testing.T) {
	sealer, _ := dnssec.NewSealer([]byte(testDNSSECSecret))
	zk, err := dnssec.InitialKeys("example.test.", dnssec.SchemeSplit, sealer, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := state.Empty()
	e := s.Edit(s.Index + 1)
	e.SetZoneKeys("example.test.", zk)
	s = e.Next
	var full, hidden bytes.Buffer
	if err := s.WriteJSON(&full); err != nil {
		t.Fatal(err)
	}
	if err := s.WithoutSealed().WriteJSON(&hidden); err != nil {
		t.Fatal(err)
	}
	sealed := base64.StdEncoding.EncodeToString(zk.Keys[0].Sealed)
	if !strings.Contains(full.String(), sealed) || strings.Contains(hidden.String(), sealed) || !strings.Contains(hidden.String(), zk.Keys[0].PublicKey) {
		t.Fatalf("full has the sealed half: %v; hidden has it: %v, has the public key: %v",
			strings.Contains(full.String(), sealed), strings.Contains(hidden.String(), sealed), strings.Contains(hidden.String(), zk.Keys[0].PublicKey))
	}
	d := &state.Delta{ZoneKeys: map[string]*dnssec.ZoneKeys{"example.test.": zk}}
	h := d.WithoutSealed()
	if h.ZoneKeys["example.test."].Keys[0].Sealed != nil || d.ZoneKeys["example.test."].Keys[0].Sealed == nil || zk.Keys[0].Sealed == nil {
		t.Fatal("the delta's copy keeps a sealed half, or the original lost it")
	}
}
