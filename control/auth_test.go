package control

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
)

// Zone scopes are domain names compared by whole labels: a zone and the zones below it,
// never a name that merely starts with the scope's text; check scopes stay text prefixes.
func TestScopeZoneLabels(t *testing.T) {
	sc, err := ParseScope("write:check=web-,zone=shop,zone=Web.Example.COM.")
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.String(); got != "write:check=web-,zone=shop.,zone=web.example.com." {
		t.Fatalf("canonical scope %q", got)
	}
	p := Principal{Name: "team", Scope: sc}
	s := state.NewState(&config.Document{})
	for _, tc := range []struct {
		zone string
		want bool
	}{
		{"shop.", true},
		{"SHOP", true},
		{"a.shop.", true},
		{"b.a.shop", true},
		{"web.example.com.", true},
		{"canary.web.example.com.", true},
		{"shop.victim.test.", false},
		{"shopping.test.", false},
		{"shopping.", false},
		{"xshop.", false},
		{"web.example.com.victim.test.", false},
		{"myweb.example.com.", false},
		{"example.com.", false},
		{"com.", false},
	} {
		for _, cmd := range []*state.Command{
			{Op: state.OpPutZone, Zone: &config.Zone{Name: tc.zone}},
			{Op: state.OpDeleteZone, ZoneName: tc.zone},
			{Op: state.OpPutRecordSet, ZoneName: tc.zone},
			{Op: state.OpPutZoneKeys, ZoneName: tc.zone},
			{Op: state.OpPutZoneKeys, ZoneKeys: &dnssec.ZoneKeys{Zone: tc.zone}},
			{Op: state.OpSetOverride, Override: &state.Override{Kind: state.OverrideDrain, Zone: tc.zone}},
		} {
			if err := permit(p, s, cmd); (err == nil) != tc.want {
				t.Errorf("%s on zone %q: %v, want allowed %v", cmd.Op, tc.zone, err, tc.want)
			}
		}
	}
	for id, want := range map[string]bool{"web-1": true, "web-": true, "web": false, "db-1": false} {
		if err := permit(p, s, &state.Command{Op: state.OpDeleteCheck, ID: id}); (err == nil) != want {
			t.Errorf("check %q: %v, want allowed %v", id, err, want)
		}
	}
	for _, bad := range []string{"write:zone=shop-*", "write:zone=a..b", "write:zone=.", "write:zone=-shop", "write:zone=shop/x", "write:zone=" + strings.Repeat("a", 64)} {
		if _, err := ParseScope(bad); err == nil || !strings.Contains(err.Error(), "is not a domain name") {
			t.Errorf("ParseScope(%q): %v, want refused as not a domain name", bad, err)
		}
	}
	if _, err := ParseScope("write:zone=_acme.shop-1"); err != nil {
		t.Errorf("a name with '_' and '-': %v", err)
	}
}

// A rollover is a write to its zone: a scoped token rolls its own zone's keys (403 for
// another's, keys unchanged); every phase is in the audit log under the token's name, the
// administrator's too; a KSK/CSK finish before the TTLs it waits for is refused with 409
// saying when, unless forced; with the clock past that time it is accepted.
func TestRolloverScopeAuditAndWait(t *testing.T) {
	c := newClusterWith(t, 1, &cluster{maxBody: 1 << 20, timing: testTiming})
	v := c.voters[0]
	api, sec, _ := scopedAPI(t, v)
	doc := `{"regions": ["a", "b", "c"], "zones": [
	 {"name": "web.test.", "dnssec": {"enabled": true, "keys": "combined", "dnskey_ttl": 60}, "name_servers": ["ns1.example.net."], "record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.1"}]}]},
	 {"name": "other.test.", "dnssec": {"enabled": true, "keys": "combined"}, "name_servers": ["ns1.example.net."], "record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.2"}]}]}]}`
	if code, out := serve(api, "PUT", "/v1/document", sec["admin"], doc); code != 200 {
		t.Fatalf("document: %d %s", code, out)
	}
	waitFor(t, 10*time.Second, "both zones have keys", func() bool {
		_, a := v.node.State().ZoneKeys("web.test")
		_, b := v.node.State().ZoneKeys("other.test")
		return a && b
	})
	keysOf := func(zone string) string {
		zk, _ := v.node.State().ZoneKeys(zone)
		b, _ := json.Marshal(zk)
		return string(b)
	}
	other := keysOf("other.test")
	for _, body := range []string{`{"role": "csk"}`, `{"role": "csk", "finish": true}`, `{"role": "csk", "finish": true, "force": true}`} {
		if code, out := serve(api, "POST", "/v1/zones/other.test./dnssec/rollover", sec["web-team"], body); code != 403 || !strings.Contains(out, "outside") {
			t.Errorf("web-team rolls other.test with %s: %d %s, want 403", body, code, out)
		}
		if code, _ := serve(api, "POST", "/v1/zones/other.test./dnssec/rollover", sec["viewer"], body); code != 401 {
			t.Errorf("viewer rolls other.test: %d, want 401", code)
		}
	}
	if keysOf("other.test") != other {
		t.Fatal("other.test's keys changed")
	}
	auditBefore := len(v.node.State().Audit(0, 0))

	// Its own zone: the start is accepted, an immediate finish refused with 409 and the time.
	if code, out := serve(api, "POST", "/v1/zones/web.test/dnssec/rollover", sec["web-team"], `{"role": "csk"}`); code != 200 {
		t.Fatalf("web-team starts its rollover: %d %s", code, out)
	}
	zk, _ := v.node.State().ZoneKeys("web.test")
	started := zk.Keys[len(zk.Keys)-1].Publish
	if want := started + 60 + 172800 + state.RolloverMargin; zk.Keys[1].FinishAfter != want {
		t.Fatalf("FinishAfter %d, want the start + DNSKEY TTL + 2 days + margin = %d", zk.Keys[1].FinishAfter, want)
	}
	code, out := serve(api, "POST", "/v1/zones/web.test/dnssec/rollover", sec["web-team"], `{"role": "csk", "finish": true}`)
	when := time.Unix(zk.Keys[1].FinishAfter, 0).UTC().Format(time.RFC3339)
	if code != 409 || !strings.Contains(out, "may be finished from "+when) || !strings.Contains(out, `\"force\": true`) {
		t.Fatalf("finish right after the start: %d %s, want 409 saying %s", code, out, when)
	}
	if code, out := serve(api, "POST", "/v1/zones/web.test/dnssec/rollover", sec["web-team"], `{"role": "csk", "force": true}`); code != 400 {
		t.Fatalf("force without finish: %d %s", code, out)
	}
	code, out = serve(api, "GET", "/v1/zones/web.test/dnssec", sec["viewer"], "")
	if code != 200 || !strings.Contains(out, `"finish_after": "`+when+`"`) {
		t.Fatalf("the view does not say when the rollover may finish (%s): %s", when, out)
	}

	// With the clock at the earliest finish, the voter finishes it (a second before, not).
	admin := &state.AuditInfo{Time: time.Now(), Token: "admin", Method: "POST", Path: "/v1/zones/web.test./dnssec/rollover"}
	earliest := time.Unix(zk.Keys[1].FinishAfter, 0)
	if _, err := v.node.Rollover("web.test", state.RolloverRequest{Role: dnssec.RoleCSK, Finish: true}, earliest.Add(-time.Second), admin); statusOf(err) != 409 {
		t.Fatalf("finish a second early: %v", err)
	}
	if _, err := v.node.Rollover("web.test", state.RolloverRequest{Role: dnssec.RoleCSK, Finish: true}, earliest, admin); err != nil {
		t.Fatalf("finish at the earliest time: %v", err)
	}

	// The administrator's forced finish of another zone's rollover is accepted and audited.
	if code, out := serve(api, "POST", "/v1/zones/other.test/dnssec/rollover", sec["admin"], `{"role": "csk"}`); code != 200 {
		t.Fatalf("admin starts other.test: %d %s", code, out)
	}
	if code, out := serve(api, "POST", "/v1/zones/other.test/dnssec/rollover", sec["admin"], `{"role": "csk", "finish": true, "force": true}`); code != 200 {
		t.Fatalf("admin forces other.test's finish: %d %s", code, out)
	}
	var got []string
	for _, e := range v.node.State().Audit(0, 0)[auditBefore:] {
		if e.Op != state.OpPutZoneKeys {
			t.Errorf("audit entry %+v", e)
		}
		got = append(got, e.Token+" "+e.Method+" "+e.Path+": "+e.Summary)
	}
	want := []string{"web-team POST /v1/zones/web.test/dnssec/rollover: dnssec rollover start csk of web.test.",
		"admin POST /v1/zones/web.test./dnssec/rollover: dnssec rollover finish csk of web.test.",
		"admin POST /v1/zones/other.test/dnssec/rollover: dnssec rollover start csk of other.test.",
		"admin POST /v1/zones/other.test/dnssec/rollover: dnssec rollover finish csk of other.test."}
	if len(got) != len(want) || !slices.ContainsFunc(got[3:], func(s string) bool { return strings.Contains(s, "(forced ") }) || strings.Contains(got[1], "forced") {
		t.Fatalf("audit: %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("audit entry %d: %q, want it to start %q", i, got[i], want[i])
		}
	}
}
