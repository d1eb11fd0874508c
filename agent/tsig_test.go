package agent

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location"
)

// A TSIG key put through the API reaches a location that has no key file but the voters'
// DNSSEC secret: it serves an AXFR signed with the key (and refuses one without it), and its
// NOTIFY to the secondary is signed with the key. A location of the same region without the
// DNSSEC secret cannot open the key: /readyz lists the zone as degraded, saying why. A
// location whose key file has a key of the same name uses the file's.
func TestTSIGKeyFromTheControlPlane(t *testing.T) {
	const apex, keyName = "demo.vigil.test.", "api-xfr."
	secret := base64.StdEncoding.EncodeToString([]byte("tsig node test secret 0123456789"))

	// The secondary: a UDP listener that counts NOTIFY messages whose TSIG verifies.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var notified atomic.Int32
	sec := &dns.Server{PacketConn: pc, TsigSecret: map[string]string{keyName: secret},
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			if r.Opcode == dns.OpcodeNotify && r.IsTsig() != nil && w.TsigStatus() == nil {
				notified.Add(1)
				m.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
			}
			w.WriteMsg(m)
		})}
	go sec.ActivateAndServe()
	t.Cleanup(func() { sec.Shutdown() })

	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	doc.Zones[0].Transfers = &config.Transfers{Region: "us-east", Allow: []string{"127.0.0.0/8"},
		Secondaries: []config.Secondary{{Address: pc.LocalAddr().String(), Key: keyName}}}
	if err := doc.Validate(); err != nil {
		t.Fatal(err)
	}
	_, api := startVoter(t, doc, func(vc *Config) { vc.DNSSECSecret = testKey })
	req, _ := http.NewRequest(http.MethodPut, api+"/v1/tsig-keys/"+keyName, strings.NewReader(fmt.Sprintf(`{"algorithm": "hmac-sha256", "secret": %q}`, secret)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT the key: %s %s", resp.Status, out)
	}

	acfg := dataNode(t, "a", "us-east", t.TempDir(), []string{api})
	acfg.DNSSECSecret = testKey
	a := start(t, mustNew(t, acfg))
	b := start(t, mustNew(t, dataNode(t, "b", "us-east", t.TempDir(), []string{api})))
	fileSecret := base64.StdEncoding.EncodeToString([]byte("the key file's own secret 012345"))
	ccfg := dataNode(t, "c", "us-east", t.TempDir(), []string{api})
	ccfg.DNSSECSecret = testKey
	ccfg.TSIGKeys = []location.TSIGKey{{Name: keyName, Secret: fileSecret}}
	c := start(t, mustNew(t, ccfg))

	axfrFrom := func(addr, key string) (int, error) {
		m := new(dns.Msg)
		m.SetAxfr(apex)
		tr := &dns.Transfer{DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second}
		if key != "" {
			m.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
			tr.TsigSecret = map[string]string{keyName: key}
		}
		env, err := tr.In(m, addr)
		if err != nil {
			return 0, err
		}
		n := 0
		for e := range env {
			if e.Error != nil {
				return n, e.Error
			}
			n += len(e.RR)
		}
		return n, nil
	}
	axfr := func(withKey bool) (int, error) {
		if withKey {
			return axfrFrom(a.DNSAddr(), secret)
		}
		return axfrFrom(a.DNSAddr(), "")
	}
	eventually(t, 20*time.Second, "an AXFR signed with the control plane's key", func() (bool, string) {
		n, err := axfr(true)
		return err == nil && n > 2, fmt.Sprintf("%d records, %v", n, err)
	})
	if n, err := axfr(false); err == nil {
		t.Errorf("an AXFR without the key got %d records", n)
	}
	eventually(t, 20*time.Second, "a NOTIFY signed with the key", func() (bool, string) {
		return notified.Load() > 0, "none yet"
	})
	if rd := a.Ready(); slices.ContainsFunc(rd.Degraded, func(s string) bool { return strings.Contains(s, keyName) }) {
		t.Errorf("the location with the secret is degraded: %v", rd.Degraded)
	}
	eventually(t, 20*time.Second, "an AXFR signed with the file's key where both hold one", func() (bool, string) {
		n, err := axfrFrom(c.DNSAddr(), fileSecret)
		return err == nil && n > 2, fmt.Sprintf("%d records, %v", n, err)
	})
	if n, err := axfrFrom(c.DNSAddr(), secret); err == nil {
		t.Errorf("the location with a key file took the control plane's secret for the same name: %d records", n)
	}
	eventually(t, 20*time.Second, "the location without the secret is degraded for the zone", func() (bool, string) {
		rd := b.Ready()
		return slices.ContainsFunc(rd.Degraded, func(s string) bool {
			return strings.Contains(s, apex) && strings.Contains(s, keyName) && strings.Contains(s, "no DNSSEC secret")
		}), fmt.Sprint(rd.Degraded)
	})
}
