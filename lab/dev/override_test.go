package dev

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// controlClient returns a client of the dev network's control API with the demo token.
func controlClient(t *testing.T, n *Network) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Voters: []string{n.ControlURL()}, Token: DemoToken, HTTP: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDevOverrideEveryLocation: a drain of www's primary, set through the control API, makes
// every location of the dev network answer the secondary within a second, ends at every
// location within a second after its expiry, and the audit log says who set it. The second
// is an idle machine's: a write, a watch and an install, which the slowdown measured
// meanwhile scales (internal/calibrate).
func TestDevOverrideEveryLocation(t *testing.T) {
	n := startTest(t)
	m := calibrate.Start()
	defer m.Stop()
	regions := n.cfg.Regions
	eventually(t, 20*time.Second, "www answers us-east everywhere", allAnswer(n, regions, "www.demo.vigil.test", "192.0.2.1"))
	ctl := controlClient(t, n)
	set := time.Now()
	if _, err := ctl.SetOverride(t.Context(), state.OverrideRequest{Kind: state.OverrideDrain, Zone: "demo.vigil.test", Name: "www", Type: "A",
		Value: "192.0.2.1", Reason: "host swap", For: "3s"}); err != nil {
		t.Fatal(err)
	}
	list, err := ctl.Overrides(t.Context())
	if err != nil || len(list) != 1 {
		t.Fatalf("overrides: %+v %v", list, err)
	}
	expires := list[0].Expires
	secondary := allAnswer(n, regions, "www.demo.vigil.test", "198.51.100.1")
	for ok, why := secondary(); !ok; ok, why = secondary() {
		if r := m.Since(set); r.Wall > r.Scale(time.Second) {
			t.Fatalf("the drain is not in force at every location within 1s of an idle machine (%v): %s", r, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("drain in force at every location %v after the write was sent", time.Since(set).Round(time.Millisecond))
	primary := allAnswer(n, regions, "www.demo.vigil.test", "192.0.2.1")
	for ok, why := primary(); !ok; ok, why = primary() {
		if r := m.Since(expires); r.Wall > r.Scale(time.Second) {
			t.Fatalf("the drain has not ended at every location within 1s of an idle machine of its expiry (%v): %s", r, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if time.Now().Before(expires) {
		t.Fatalf("the drain ended before its expiry %v", expires)
	}
	t.Logf("drain ended at every location %v after its expiry", time.Since(expires).Round(time.Millisecond))
	audit, err := ctl.Audit(t.Context(), 0, 0)
	if err != nil || len(audit.Entries) == 0 {
		t.Fatalf("audit: %+v %v", audit, err)
	}
	last := audit.Entries[len(audit.Entries)-1]
	if last.Op != state.OpSetOverride || last.Token != "write-token-1" || !strings.Contains(last.Summary, "drain record www A 192.0.2.1") {
		t.Errorf("audit: %+v", last)
	}
}
