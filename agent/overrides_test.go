package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// setOverride posts an override through the control API and returns its expiry as the
// voter recorded it.
func setOverride(t *testing.T, api, body string) time.Time {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, api+"/v1/overrides", bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/overrides %s: %s", body, resp.Status)
	}
	req, _ = http.NewRequest(http.MethodGet, api+"/v1/overrides", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err = (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Data []state.Override }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) == 0 {
		t.Fatalf("GET /v1/overrides: %v %+v", err, list)
	}
	var last time.Time
	for _, o := range list.Data {
		if o.Created.After(last) {
			last = o.Expires
		}
	}
	return last
}

// TestOverridesAtLocation: through the control plane, a drain of www's primary record makes
// a location answer the secondary within a second, and the answer comes back when the drain
// ends (not before its expiry, within a second after); a check forced unhealthy does the
// same, and the answer explanation names the drain.
func TestOverridesAtLocation(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	_, api := startVoter(t, doc, nil)
	a := start(t, mustNew(t, dataNode(t, "a", "us-east", t.TempDir(), []string{api})))
	answer := func() []string {
		got, _ := query(a.DNSAddr(), "www.demo.vigil.test")
		return got
	}
	eventually(t, 20*time.Second, "www answers the primary", func() (bool, string) {
		got := answer()
		return slices.Equal(got, []string{"192.0.2.1"}), fmt.Sprint(got)
	})
	for _, tc := range []struct{ what, body string }{
		{"drain", `{"kind": "drain", "zone": "demo.vigil.test", "name": "www", "type": "A", "value": "192.0.2.1", "reason": "host swap", "for": "3s"}`},
		{"forced unhealthy", `{"kind": "unhealthy", "check": "web-us-east", "reason": "deploy", "for": "3s"}`},
	} {
		m := calibrate.Start()
		defer m.Stop()
		set := time.Now()
		expires := setOverride(t, api, tc.body)
		took := eventually(t, 5*time.Second, tc.what+": www answers the secondary", func() (bool, string) {
			got := answer()
			return slices.Equal(got, []string{"198.51.100.1"}), fmt.Sprint(got)
		})
		t.Logf("%s: in force at the location %v after the write was acknowledged", tc.what, took)
		// Within 1s on an idle machine, scaled by the slowdown measured meanwhile
		// (internal/calibrate): a write, a watch and an install.
		if r := m.Since(set); took > r.Scale(time.Second) {
			t.Errorf("%s: took %v to reach the location, want within 1s of an idle machine (%v)", tc.what, took, r)
		}
		if tc.what == "drain" {
			res, err := a.Answer("www.demo.vigil.test", "A")
			if err != nil || res.Candidates[0].HealthCheck != DrainCheck || res.Candidates[0].Health.String() != "unhealthy" {
				t.Errorf("explanation does not name the drain: %+v %v", res, err)
			}
		}
		eventually(t, 10*time.Second, tc.what+": www answers the primary again", func() (bool, string) {
			got := answer()
			return slices.Equal(got, []string{"192.0.2.1"}), fmt.Sprint(got)
		})
		back := time.Now()
		if r := m.Since(expires); back.Before(expires) || back.Sub(expires) > r.Scale(time.Second) {
			t.Errorf("%s: set at %v, expires %v, ended at the location at %v (want within 1s of an idle machine after the expiry: %v)", tc.what, set, expires, back, r)
		}
		t.Logf("%s: ended %v after its expiry", tc.what, back.Sub(expires))
	}
}
