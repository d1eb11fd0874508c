package dev

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
)

// controlDo sends a JSON request to the dev control API with the demo token.
func controlDo(t *testing.T, n *Network, method, path, body string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, n.ControlURL()+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+DemoToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDevOverrideEveryLocation: a drain of www's primary, set through the control API, makes
// every location of the dev network answer the secondary within a second, ends at every
// location within a second after its expiry, and the audit log says who set it.
func TestDevOverrideEveryLocation(t *testing.T) {
	n := startTest(t)
	regions := n.cfg.Regions
	eventually(t, 20*time.Second, "www answers us-east everywhere", allAnswer(n, regions, "www.demo.vigil.test", "192.0.2.1"))
	set := time.Now()
	controlDo(t, n, "POST", "/v1/overrides", `{"kind": "drain", "zone": "demo.vigil.test", "name": "www", "type": "A", "value": "192.0.2.1", "reason": "host swap", "for": "3s"}`, nil)
	var list struct{ Data []control.OverrideView }
	controlDo(t, n, "GET", "/v1/overrides", "", &list)
	if len(list.Data) != 1 {
		t.Fatalf("overrides: %+v", list.Data)
	}
	expires := list.Data[0].Expires
	secondary := allAnswer(n, regions, "www.demo.vigil.test", "198.51.100.1")
	for ok, why := secondary(); !ok; ok, why = secondary() {
		if time.Since(set) > time.Second {
			t.Fatalf("the drain is not in force at every location within 1s: %s", why)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("drain in force at every location %v after the write was sent", time.Since(set).Round(time.Millisecond))
	primary := allAnswer(n, regions, "www.demo.vigil.test", "192.0.2.1")
	for ok, why := primary(); !ok; ok, why = primary() {
		if time.Since(expires) > time.Second {
			t.Fatalf("the drain has not ended at every location within 1s of its expiry: %s", why)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if time.Now().Before(expires) {
		t.Fatalf("the drain ended before its expiry %v", expires)
	}
	t.Logf("drain ended at every location %v after its expiry", time.Since(expires).Round(time.Millisecond))
	var audit struct{ Data control.AuditView }
	controlDo(t, n, "GET", "/v1/audit", "", &audit)
	last := audit.Data.Entries[len(audit.Data.Entries)-1]
	if last.Op != control.OpSetOverride || last.Token != "write-token-1" || !strings.Contains(last.Summary, "drain record www A 192.0.2.1") {
		t.Errorf("audit: %+v", last)
	}
}
