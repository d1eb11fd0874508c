package abuse

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAbuseOutOfScopeWrites: a voter with named tokens (stored as SHA-256 only): "web-team"
// may write only checks starting web- and zones starting web.test., "viewer" may only read.
// Every write route, aimed outside web-team's scope, is sent with web-team's token, with
// viewer's, with web-team's secret altered and with the token file's line (the hash) as the
// token. None may be applied and none may reach the audit log; the control, the same token
// inside its scope, is applied and audited under its name.
func TestAbuseOutOfScopeWrites(t *testing.T) {
	toks, secrets, lines := namedTokens(t, [2]string{"web-team", "write:check=web-,zone=web.test."}, [2]string{"viewer", "read"})
	v := startVoterWith(t, voterOptions{Tokens: toks})
	node, base := v.node, v.base
	client := &http.Client{Timeout: 10 * time.Second}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	demo, err := os.ReadFile("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if code, out := send(t, client, base, writeReq{"PUT", "/v1/document", "application/yaml", string(demo)}, bearer(writeToken)); code != http.StatusOK {
		t.Fatalf("put the demo: %d %s", code, out)
	}
	const check = `{"id": "db-1", "protocol": "tcp", "target": {"host": "192.0.2.7", "port": 5432}}`
	const zone = `{"name": "demo.vigil.test.", "record_sets": []}`
	const rs = `{"name": "x", "type": "A", "records": [{"value": "192.0.2.66"}]}`
	// Every write route, each aimed outside web-team's scope.
	outside := []writeReq{
		{"POST", "/v1/checks", "application/json", check},
		{"PUT", "/v1/checks/db-1", "application/json", check},
		{"PUT", "/v1/checks/webx", "application/json", strings.Replace(check, "db-1", "webx", 1)},
		{"DELETE", "/v1/checks/api-1", "", ""},
		{"POST", "/v1/zones", "application/json", zone},
		{"PUT", "/v1/zones/demo.vigil.test.", "application/json", zone},
		{"DELETE", "/v1/zones/demo.vigil.test.", "", ""},
		{"POST", "/v1/zones/demo.vigil.test./record_sets", "application/json", rs},
		{"PUT", "/v1/zones/demo.vigil.test./record_sets/x/A", "application/json", rs},
		{"DELETE", "/v1/zones/demo.vigil.test./record_sets/www/A", "", ""},
		{"POST", "/v1/zones/demo.vigil.test./dnssec/rollover", "application/json", `{"role": "csk"}`},
		{"PUT", "/v1/document", "application/yaml", string(demo)},
		{"PUT", "/v1/notifications", "application/json", `{}`},
		{"POST", "/v1/overrides", "application/json", `{"kind": "unhealthy", "check": "api-1", "reason": "x", "for": "1h"}`},
		{"POST", "/v1/overrides", "application/json", `{"kind": "drain", "zone": "demo.vigil.test", "name": "www", "type": "A", "value": "192.0.2.1", "reason": "x", "for": "1h"}`},
		{"POST", "/v1/cluster/voters", "application/json", `{"id": "intruder", "raft_address": "127.0.0.1:9"}`},
		{"DELETE", "/v1/cluster/voters/v0", "", ""},
	}
	altered := secrets["web-team"][:len(secrets["web-team"])-1] + "A"
	if altered == secrets["web-team"] {
		altered = secrets["web-team"][:len(secrets["web-team"])-1] + "B"
	}
	creds := []struct {
		name string
		set  func(*http.Request)
	}{
		{"web-team (scoped)", bearer(secrets["web-team"])},
		{"viewer (read)", bearer(secrets["viewer"])},
		{"web-team altered", bearer(altered)},
		{"the token file's hash", bearer(strings.Fields(lines["web-team"])[2])},
	}
	before, auditBefore := node.State().Index, len(node.State().Audit(0, 0))
	attempts, through := 0, 0
	codes := map[int]int{}
	for _, c := range creds {
		for _, w := range outside {
			attempts++
			code, out := send(t, client, base, w, c.set)
			codes[code]++
			if code != http.StatusForbidden && code != http.StatusUnauthorized {
				through++
				t.Errorf("%s %s with %s: %d %s", w.method, w.path, c.name, code, out)
			}
		}
	}
	after, auditAfter := node.State().Index, len(node.State().Audit(0, 0))
	// Control: inside its scope, web-team's token writes, and the audit log names it.
	inside := []writeReq{
		{"PUT", "/v1/checks/web-extra", "application/json", strings.Replace(check, "db-1", "web-extra", 1)},
		{"POST", "/v1/overrides", "application/json", `{"kind": "unhealthy", "check": "web-us-east", "reason": "deploy", "for": "1h"}`},
	}
	applied := 0
	for _, w := range inside {
		if code, out := send(t, client, base, w, bearer(secrets["web-team"])); code/100 == 2 {
			applied++
		} else {
			t.Errorf("control %s %s: %d %s", w.method, w.path, code, out)
		}
	}
	entries := node.State().Audit(2, 0)
	named := len(entries) == 2 && entries[0].Token == "web-team" && entries[1].Token == "web-team"
	t.Logf("status codes %v", codes)
	row(t, fmt.Sprintf("out-of-scope writes: %d writes covering every write route, each aimed outside a scoped token's scope (checks starting web-, the zone web.test. and zones below it), sent with that token, a read-only named token, the scoped token altered by one character, and its token-file line's hash as the token (real HTTP, raft voter with BoltDB)", len(outside)),
		fmt.Sprintf("%d requests", attempts),
		fmt.Sprintf("applied %d (state index %d before and after), audit entries added %d, answered other than 401/403 %d (control: %d of %d writes inside the scope applied, audited under the token's name: %v)", after-before, before, auditAfter-auditBefore, through, applied, len(inside), named))
	if after != before || auditAfter != auditBefore || through != 0 || applied != len(inside) || !named {
		t.Errorf("got through: index %d -> %d, audit %d -> %d, %d not refused; control %d of %d, named %v", before, after, auditBefore, auditAfter, through, applied, len(inside), named)
	}
}
