package abuse

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
)

// scopedVoter is one raft voter (BoltDB log, real HTTP on loopback) whose API knows the
// plain writeToken and the named tokens given as name → scope.
type scopedVoter struct {
	node    *control.Server
	base    string
	secrets map[string]string
	client  *http.Client
}

// startScopedVoter starts a scopedVoter that holds a DNSSEC secret, the leader of its own
// cluster.
func startScopedVoter(t *testing.T, scopes map[string]string) *scopedVoter {
	t.Helper()
	var pairs [][2]string
	for name, scope := range scopes {
		pairs = append(pairs, [2]string{name, scope})
	}
	toks, secrets, _ := namedTokens(t, pairs...)
	v := startVoterWith(t, voterOptions{Tokens: toks, DNSSECSecret: []byte("abuse-test-dnssec-secret-0000000")})
	return &scopedVoter{node: v.node, base: v.base, secrets: secrets, client: &http.Client{Timeout: 10 * time.Second}}
}

// as sends w with the named token (or the plain write token for "admin").
func (v *scopedVoter) as(t *testing.T, name string, w writeReq) (int, []byte) {
	t.Helper()
	tok := writeToken
	if name != "admin" {
		tok = v.secrets[name]
	}
	return send(t, v.client, v.base, w, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) })
}

// zoneJSON is a zone of one wildcard-free A record set, signed when keys is a scheme.
func zoneJSON(name, keys string) string {
	sign := ""
	if keys != "" {
		sign = fmt.Sprintf(`"dnssec": {"enabled": true, "keys": %q, "dnskey_ttl": 60}, `, keys)
	}
	return fmt.Sprintf(`{"name": %q, %s"name_servers": ["ns1.example.net."], "record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.1"}]}]}`, name, sign)
}

// TestAbuseZoneScopeLabels: a token scoped zone=shop,zone=web.example.com. (the scope of the
// finding, where "shop" compared as text allowed shop.victim.test.) tries to create, fill and
// drain names of another team's zone victim.test. (whose wildcard answers every name under
// it) and names that only start with its scope's text. Each write must be refused with 403
// and the state must not move. The control: the same token creates its own zones and zones
// below them.
func TestAbuseZoneScopeLabels(t *testing.T) {
	v := startScopedVoter(t, map[string]string{"shop-team": "write:zone=shop,zone=web.example.com."})
	victim := `{"name": "victim.test.", "name_servers": ["ns1.example.net."], "record_sets": [{"name": "*", "type": "A", "records": [{"value": "192.0.2.80"}]}]}`
	if code, out := v.as(t, "admin", writeReq{"POST", "/v1/zones", "application/json", victim}); code != http.StatusCreated {
		t.Fatalf("admin creates victim.test: %d %s", code, out)
	}
	rs := `{"name": "www", "type": "A", "records": [{"value": "192.0.2.66"}]}`
	var attacks []writeReq
	for _, name := range []string{"shop.victim.test.", "web.example.com.victim.test.", "shopping.test.", "shop-test.", "www.shop.victim.test", "SHOP.victim.test", "shop.victim.test"} {
		attacks = append(attacks,
			writeReq{"POST", "/v1/zones", "application/json", zoneJSON(name, "")},
			writeReq{"PUT", "/v1/zones/" + name, "application/json", zoneJSON(name, "")},
			writeReq{"POST", "/v1/zones/" + name + "/record_sets", "application/json", rs},
			writeReq{"PUT", "/v1/zones/" + name + "/record_sets/www/A", "application/json", rs},
		)
	}
	attacks = append(attacks,
		writeReq{"POST", "/v1/zones/victim.test./record_sets", "application/json", strings.Replace(rs, "www", "shop", 1)},
		writeReq{"DELETE", "/v1/zones/victim.test.", "", ""},
		writeReq{"POST", "/v1/overrides", "application/json", `{"kind": "drain", "zone": "victim.test", "name": "*", "type": "A", "value": "192.0.2.80", "reason": "x", "for": "1h"}`},
	)
	before := v.node.State().Index
	codes, through := map[int]int{}, 0
	for _, w := range attacks {
		code, out := v.as(t, "shop-team", w)
		codes[code]++
		if code != http.StatusForbidden {
			through++
			t.Errorf("%s %s: %d %s, want 403", w.method, w.path, code, out)
		}
	}
	after := v.node.State().Index
	var zones []string
	for z := range v.node.State().ZoneHeads() {
		zones = append(zones, z.Name)
	}
	// Control: its own zones and zones below them, by their labels.
	own := []string{"shop.", "a.shop.", "web.example.com.", "canary.web.example.com."}
	applied := 0
	for _, name := range own {
		if code, out := v.as(t, "shop-team", writeReq{"POST", "/v1/zones", "application/json", zoneJSON(name, "")}); code == http.StatusCreated {
			applied++
		} else {
			t.Errorf("control: shop-team creates %s: %d %s", name, code, out)
		}
	}
	t.Logf("status codes %v; zones after the attack %v", codes, zones)
	row(t, fmt.Sprintf("zone scopes by labels: a token scoped zone=shop,zone=web.example.com. creates, fills and drains names below another team's wildcard zone victim.test. (shop.victim.test., web.example.com.victim.test.) and names that only start with its scope's text (shopping.test., shop-test.), %d writes over real HTTP to a raft voter", len(attacks)),
		fmt.Sprintf("%d requests", len(attacks)),
		fmt.Sprintf("applied %d (state index %d before, %d after), answered other than 403 %d (control: %d of %d of its own zones and zones below them created: %s)", after-before, before, after, through, applied, len(own), strings.Join(own, " ")))
	if after != before || through != 0 || applied != len(own) {
		t.Errorf("index %d -> %d, %d not refused, control %d of %d", before, after, through, applied, len(own))
	}
}

// TestAbuseScopedRollover: the token of the finding (write:check=web-,zone=web.example.com.)
// starts and finishes DNSSEC rollovers of another team's signed zones (payments.test., and
// web.example.com.victim.test. whose name starts with its scope's text), in every role and
// with force, over real HTTP: each must be refused with 403, the keys unchanged and nothing
// recorded. The controls: on its own zone the same token starts a rollover (audited under its
// name with the zone and phase); the finish right after is refused with 409 (keys unchanged)
// and is accepted with the voter's clock at the earliest finish; on its own subzone a forced
// finish is accepted and audited as forced.
func TestAbuseScopedRollover(t *testing.T) {
	v := startScopedVoter(t, map[string]string{"web-team": "write:check=web-,zone=web.example.com."})
	doc := fmt.Sprintf(`{"regions": ["a", "b", "c"], "zones": [%s, %s, %s, %s]}`, zoneJSON("web.example.com.", "combined"), zoneJSON("canary.web.example.com.", "combined"),
		zoneJSON("payments.test.", "split"), zoneJSON("web.example.com.victim.test.", "combined"))
	if code, out := v.as(t, "admin", writeReq{"PUT", "/v1/document", "application/json", doc}); code != http.StatusOK {
		t.Fatalf("admin puts the zones: %d %s", code, out)
	}
	zones := []string{"web.example.com.", "canary.web.example.com.", "payments.test.", "web.example.com.victim.test."}
	if !waitFor(10*time.Second, func() bool {
		for _, z := range zones {
			if _, ok := v.node.State().ZoneKeys(z); !ok {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the signed zones got no keys within 10s")
	}
	keys := func(zone string) string {
		zk, _ := v.node.State().ZoneKeys(zone)
		b, _ := json.Marshal(zk)
		return string(b)
	}
	rollovers := func() (out []*state.AuditEntry) {
		for _, e := range v.node.State().Audit(0, 0) {
			if e.Op == state.OpPutZoneKeys {
				out = append(out, e)
			}
		}
		return out
	}
	var attacks []writeReq
	for _, zone := range []string{"payments.test.", "payments.test", "PAYMENTS.TEST.", "web.example.com.victim.test."} {
		for _, body := range []string{`{"role": "ksk"}`, `{"role": "zsk"}`, `{"role": "csk"}`, `{"role": "ksk", "finish": true}`, `{"role": "csk", "finish": true, "force": true}`} {
			attacks = append(attacks, writeReq{"POST", "/v1/zones/" + zone + "/dnssec/rollover", "application/json", body})
		}
	}
	victimKeys := keys("payments.test.") + keys("web.example.com.victim.test.")
	codes, through := map[int]int{}, 0
	for _, w := range attacks {
		code, out := v.as(t, "web-team", w)
		codes[code]++
		if code != http.StatusForbidden {
			through++
			t.Errorf("%s %s %s: %d %s, want 403", w.method, w.path, w.body, code, out)
		}
	}
	unchanged := keys("payments.test.")+keys("web.example.com.victim.test.") == victimKeys
	recorded := len(rollovers())

	// Control 1: its own zone. The start is applied and audited.
	roll := func(zone, body string) (int, []byte) {
		return v.as(t, "web-team", writeReq{"POST", "/v1/zones/" + zone + "/dnssec/rollover", "application/json", body})
	}
	started := 0
	if code, out := roll("web.example.com.", `{"role": "csk"}`); code == http.StatusOK {
		started++
	} else {
		t.Errorf("control: web-team starts its own rollover: %d %s", code, out)
	}
	own := keys("web.example.com.")
	code, out := roll("web.example.com.", `{"role": "csk", "finish": true}`)
	early := code == http.StatusConflict && strings.Contains(string(out), "may be finished from") && keys("web.example.com.") == own
	if !early {
		t.Errorf("finish right after the start: %d %s, want 409 saying when, keys unchanged", code, out)
	}
	// With the voter's clock at the earliest finish (the start + DNSKEY TTL + the zone's
	// largest TTL, at least 2 days, + 60 s), the finish is accepted.
	zk, _ := v.node.State().ZoneKeys("web.example.com.")
	earliest := time.Unix(zk.Keys[len(zk.Keys)-1].FinishAfter, 0)
	wait := earliest.Sub(time.Unix(zk.Keys[len(zk.Keys)-1].Publish, 0))
	_, errEarly := v.node.Rollover("web.example.com.", state.RolloverRequest{Role: dnssec.RoleCSK, Finish: true}, earliest.Add(-time.Second), nil)
	_, errOnTime := v.node.Rollover("web.example.com.", state.RolloverRequest{Role: dnssec.RoleCSK, Finish: true}, earliest,
		&state.AuditInfo{Time: time.Now(), Token: "web-team", Method: "POST", Path: "/v1/zones/web.example.com./dnssec/rollover"})
	onTime := errEarly != nil && errOnTime == nil
	if !onTime {
		t.Errorf("finish a second before the earliest: %v; at it: %v", errEarly, errOnTime)
	}
	// Control 2: its own subzone, finished with force.
	forced := false
	if code, out := roll("canary.web.example.com", `{"role": "csk"}`); code != http.StatusOK {
		t.Errorf("control: web-team starts its subzone's rollover: %d %s", code, out)
	} else if code, out := roll("canary.web.example.com", `{"role": "csk", "finish": true, "force": true}`); code != http.StatusOK {
		t.Errorf("control: web-team forces its subzone's finish: %d %s", code, out)
	} else {
		forced = true
	}
	var audit []string
	for _, e := range rollovers() {
		audit = append(audit, e.Token+": "+e.Summary)
	}
	auditOK := len(audit) == 4 && strings.HasPrefix(audit[0], "web-team: dnssec rollover start csk of web.example.com.") &&
		strings.HasPrefix(audit[1], "web-team: dnssec rollover finish csk of web.example.com.") &&
		strings.HasPrefix(audit[2], "web-team: dnssec rollover start csk of canary.web.example.com.") &&
		strings.HasPrefix(audit[3], "web-team: dnssec rollover finish csk of canary.web.example.com.") && strings.Contains(audit[3], "(forced ")
	t.Logf("status codes %v; audit %q", codes, audit)
	row(t, fmt.Sprintf("scoped rollovers: a token scoped check=web-,zone=web.example.com. starts and finishes (forced too) KSK, ZSK and CSK rollovers of another team's signed zones payments.test. and web.example.com.victim.test. (4 spellings of the path), %d requests over real HTTP to a raft voter; then finishes its own zone's CSK rollover right after starting it", len(attacks)),
		fmt.Sprintf("%d requests", len(attacks)),
		fmt.Sprintf("answered other than 403 %d, other zones' keys changed %v, rollovers recorded %d (controls: own zone started %d of 1 and audited; finish right after the start 409, keys unchanged: %v; finish with the clock at start + %s accepted, a second earlier refused: %v; own subzone forced finish accepted and audited as forced: %v; audit %d of 4 rollover entries under web-team with zone and phase: %v)",
			through, !unchanged, recorded, started, early, wait, onTime, forced, len(audit), auditOK))
	if through != 0 || !unchanged || recorded != 0 || started != 1 || !early || !onTime || !forced || !auditOK {
		t.Errorf("through %d, unchanged %v, recorded %d, started %d, early %v, on time %v, forced %v, audit %q", through, unchanged, recorded, started, early, onTime, forced, audit)
	}
}
