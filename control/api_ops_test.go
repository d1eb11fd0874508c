package control

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
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
	var view struct{ Data state.AlertsView }
	if code != http.StatusOK || json.Unmarshal(out, &view) != nil || view.Data.Firing == nil {
		t.Fatalf("alerts: %d %s", code, out)
	}
}

// scopedAPI serves v's state through an API with named tokens: "admin" (write), "web-team"
// (write:check=web-,zone=web.test.) and "viewer" (read); it returns the API and the secrets.
func scopedAPI(t *testing.T, v *voter) (*API, map[string]string, []Token) {
	t.Helper()
	secrets := map[string]string{}
	var toks []Token
	for _, nt := range []struct{ name, scope string }{{"admin", "write"}, {"web-team", "write:check=web-,zone=web.test."}, {"viewer", "read"}} {
		sc, err := ParseScope(nt.scope)
		if err != nil {
			t.Fatal(err)
		}
		secret, line, err := NewToken(nt.name, sc)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := ParseTokenLine(line)
		if err != nil || tok.Name != nt.name || tok.Scope.String() != nt.scope {
			t.Fatalf("line %q: %+v %v", line, tok, err)
		}
		if strings.Contains(line, secret) {
			t.Fatalf("the token line holds the secret: %q", line)
		}
		toks = append(toks, tok)
		secrets[nt.name] = secret
	}
	api, err := NewAPI(APIConfig{Node: v.node, Tokens: toks})
	if err != nil {
		t.Fatal(err)
	}
	return api, secrets, toks
}

func serve(api *API, method, path, token, body string) (int, string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestScopesOverridesAudit: a scoped token writes only under its prefixes (403 elsewhere, and
// for the document), a read token not at all (401); overrides carry their author and reason
// and are cleared by ID; every accepted write is in the audit log with its token's name, and
// the log survives a snapshot and a restart.
func TestScopesOverridesAudit(t *testing.T) {
	c := newClusterWith(t, 1, &cluster{maxBody: 1 << 20, timing: testTiming, snapshotThreshold: 4})
	v := c.voters[0]
	api, sec, toks := scopedAPI(t, v)
	doc := `{"regions": ["a", "b", "c"], "checks": [{"id": "web-1", "protocol": "tcp", "target": {"host": "192.0.2.1", "port": 80}}, {"id": "db-1", "protocol": "tcp", "target": {"host": "192.0.2.2", "port": 5432}}],
	 "zones": [{"name": "web.test.", "record_sets": [{"name": "www", "type": "A", "policy": "multivalue", "records": [{"value": "192.0.2.1", "health_check": "web-1"}, {"value": "192.0.2.9"}]}]}]}`
	for _, tc := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"PUT", "/v1/document", sec["web-team"], doc, 403},
		{"PUT", "/v1/document", sec["viewer"], doc, 401},
		{"PUT", "/v1/document", sec["admin"], doc, 200},
		{"PUT", "/v1/checks/web-2", sec["web-team"], checkJSON("web-2", 81), 200},
		{"PUT", "/v1/checks/db-2", sec["web-team"], checkJSON("db-2", 82), 403},
		{"DELETE", "/v1/checks/db-1", sec["web-team"], "", 403},
		{"PUT", "/v1/notifications", sec["web-team"], `{}`, 403},
		{"POST", "/v1/overrides", sec["web-team"], `{"kind": "unhealthy", "check": "db-1", "reason": "x", "for": "1h"}`, 403},
		{"POST", "/v1/overrides", sec["web-team"], `{"kind": "unhealthy", "check": "web-1", "reason": "deploy", "for": "1h"}`, 201},
		{"POST", "/v1/overrides", sec["web-team"], `{"kind": "drain", "zone": "web.test", "name": "www", "type": "A", "value": "192.0.2.9", "reason": "host swap", "for": "30m"}`, 201},
		{"POST", "/v1/overrides", sec["admin"], `{"kind": "drain", "zone": "web.test", "name": "www", "type": "A", "value": "192.0.2.77", "reason": "x", "for": "30m"}`, 404},
		{"POST", "/v1/overrides", sec["admin"], `{"kind": "healthy", "check": "web-1", "reason": "", "for": "1h"}`, 400},
		{"POST", "/v1/overrides", sec["admin"], `{"kind": "healthy", "check": "web-1", "reason": "x"}`, 400},
		{"POST", "/v1/cluster/voters", sec["web-team"], `{"id": "x", "raft_address": "127.0.0.1:1"}`, 403},
	} {
		code, out := serve(api, tc.method, tc.path, tc.token, tc.body)
		if code != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, code, out, tc.want)
		}
	}
	ovs := v.node.State().Overrides()
	if len(ovs) != 2 {
		t.Fatalf("overrides: %+v", ovs)
	}
	for _, o := range ovs {
		if o.Author != "web-team" || o.Reason == "" || !o.Active(time.Now()) {
			t.Errorf("override %+v", o)
		}
	}
	drain := state.OverrideID("", "web.test", "www", "A", "192.0.2.9")
	if code, out := serve(api, "DELETE", "/v1/overrides/"+drain, sec["web-team"], ""); code != 200 {
		t.Fatalf("clear: %d %s", code, out)
	}
	if code, _ := serve(api, "DELETE", "/v1/overrides/"+drain, sec["admin"], ""); code != 404 {
		t.Fatalf("clear again: %d", code)
	}
	if err := v.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.stop(0)
	c.start(0)
	c.leader(5 * time.Second)
	waitFor(t, 5*time.Second, "the restarted voter to be ready", func() bool { return c.voters[0].node.Ready() })
	api, err := NewAPI(APIConfig{Node: c.voters[0].node, Tokens: toks})
	if err != nil {
		t.Fatal(err)
	}
	code, out := serve(api, "GET", "/v1/audit?limit=10", sec["viewer"], "")
	var view struct{ Data state.AuditView }
	if code != 200 || json.Unmarshal([]byte(out), &view) != nil {
		t.Fatalf("audit: %d %s", code, out)
	}
	var got []string
	for _, e := range view.Data.Entries {
		got = append(got, e.Token+" "+string(e.Op))
	}
	want := []string{"admin apply_document", "web-team put_check", "web-team set_override", "web-team set_override", "web-team clear_override"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("audit after restart: %v, want %v\n%s", got, want, out)
	}
	if e := view.Data.Entries[2]; !strings.Contains(e.Summary, "unhealthy check web-1") || e.Path != "/v1/overrides" || e.Time.IsZero() {
		t.Errorf("entry: %+v", e)
	}
	if len(c.voters[0].node.State().Overrides()) != 1 {
		t.Errorf("overrides after restart: %+v", c.voters[0].node.State().Overrides())
	}
}

// TestAuditMembership: a voter joining through the API is in the audit log, with the token's
// name.
func TestAuditMembership(t *testing.T) {
	c := newCluster(t, 2)
	l := c.leader(5 * time.Second)
	waitFor(t, 5*time.Second, "the join in the audit log", func() bool {
		for _, e := range l.node.State().Audit(10, 0) {
			if e.Op == state.OpAuditNote && strings.HasPrefix(e.Summary, "add voter v1 at ") && e.Token == "write-token-1" && e.Path == "/v1/cluster/voters" {
				return true
			}
		}
		return false
	})
}

// TestStateForReaders: GET /v1/state carries the overrides but not the audit log, while a
// snapshot carries both.
func TestStateForReaders(t *testing.T) {
	c := newCluster(t, 1)
	base := c.voters[0].url()
	mustWrite(t, "PUT", base+"/v1/document", "application/json", `{"regions": ["a"], "checks": [{"id": "c1", "protocol": "tcp", "target": {"host": "192.0.2.1", "port": 1}, "allow_fewer_regions": true}]}`)
	mustWrite(t, "POST", base+"/v1/overrides", "application/json", `{"kind": "healthy", "check": "c1", "reason": "r", "for": "1h"}`)
	_, s := readStateAPI(t, base, "")
	if len(s.Overrides()) != 1 || len(s.Audit(0, 0)) != 0 {
		t.Fatalf("GET /v1/state: overrides %d, audit entries %d; want 1 and 0", len(s.Overrides()), len(s.Audit(0, 0)))
	}
	var b strings.Builder
	if err := c.voters[0].node.State().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := state.ReadState(strings.NewReader(b.String()))
	if err != nil || len(back.Audit(0, 0)) != 2 || len(back.Overrides()) != 1 {
		t.Fatalf("snapshot form: %v, audit %d", err, len(back.Audit(0, 0)))
	}
}
