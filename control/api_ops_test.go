package control

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNotificationsAPI: PUT /v1/notifications replaces the section (YAML), GET reads it back
// with defaults, an invalid one is refused with every problem's path, and the section
// survives a whole-document read.
func TestNotificationsAPI(t *testing.T) {
	c := newCluster(t, 1)
	base := c.voters[0].url()
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", "regions: [a]\n")
	body := "receivers: [{name: hook, url: 'http://127.0.0.1:9/x'}]\nrules: [{name: down, receivers: [hook], min_locations: 2}]\n"
	mustWrite(t, "PUT", base+"/v1/notifications", "application/yaml", body)
	code, out := do(t, "GET", base+"/v1/notifications", "", "", "")
	if code != http.StatusOK || !strings.Contains(string(out), `"kind": "webhook"`) || !strings.Contains(string(out), `"min_locations": 2`) {
		t.Fatalf("GET: %d %s", code, out)
	}
	code, out = do(t, "PUT", base+"/v1/notifications", testToken, "application/yaml", "rules: [{name: x, receivers: [nobody]}]\n")
	eb := decodeError(t, out)
	if code != http.StatusUnprocessableEntity || len(eb.Errors) != 1 || eb.Errors[0].Path != "notifications.rules[0].receivers[0]" {
		t.Fatalf("invalid PUT: %d %s", code, out)
	}
	code, out = do(t, "PUT", base+"/v1/notifications", "", "application/yaml", body)
	if code != http.StatusUnauthorized {
		t.Fatalf("PUT without a token: %d %s", code, out)
	}
	_, s := readStateAPI(t, base, "")
	if n := s.Settings().Notifications; n == nil || n.Rules[0].Name != "down" {
		t.Fatalf("state: %+v", n)
	}
	code, out = do(t, "GET", base+"/v1/alerts", "", "", "")
	var view struct{ Data AlertsView }
	if code != http.StatusOK || json.Unmarshal(out, &view) != nil || view.Data.Firing == nil {
		t.Fatalf("alerts: %d %s", code, out)
	}
}
