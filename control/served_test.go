package control

import (
	"net/http"
	"strings"
	"testing"
)

// TestNeverServedRefusedAtWrite: what a location would accept and never serve as written is
// refused by the API with the path of the offending item and what to do, whichever record
// set the write touches (the one written, or one that names it), and nothing is applied: a
// delegation without its glue, records below a delegation, an address at one that is not its
// glue, aliases to a missing name, to a
// CNAME, into a delegation or round a loop, deleting an alias's target or a delegation's
// glue, and a zone's data at or below a hosted child it does not delegate. The controls, the
// same writes made servable, are accepted.
func TestNeverServedRefusedAtWrite(t *testing.T) {
	c := newCluster(t, 1)
	v := c.voters[0]
	base := v.url()
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", testDoc)
	const sets = "/v1/zones/example.test/record_sets/"
	accept := func(method, path, body string) {
		t.Helper()
		if code, out := do(t, method, base+path, testToken, "application/json", body); code != http.StatusOK {
			t.Fatalf("control %s %s: %d %s", method, path, code, out)
		}
	}
	accept("PUT", sets+"ns1.deleg/A", `{"records": [{"value": "192.0.2.53"}]}`)
	accept("PUT", sets+"deleg/NS", `{"records": [{"value": "ns1.deleg.example.test."}, {"value": "ns.elsewhere.test."}]}`)
	accept("PUT", sets+"alias-1/A", `{"alias": "www"}`)
	accept("PUT", sets+"alias-2/A", `{"alias": "alias-1"}`)
	accept("PUT", sets+"cn/CNAME", `{"records": [{"value": "www.example.test."}]}`)
	accept("PUT", "/v1/zones/hosted.example.test", `{"record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.9"}]}]}`)

	for _, tc := range []struct {
		name, method, path, body string
		errPath, says            string
	}{
		{"delegation without glue", "PUT", sets + "lame/NS", `{"records": [{"value": "ns.lame.example.test."}]}`,
			"records[0].value", "name server ns.lame.example.test. lies in the delegated zone lame.example.test., so a referral must carry its address (glue)"},
		{"in-zone name server without address", "PUT", sets + "lame/NS", `{"records": [{"value": "nothing.example.test."}]}`,
			"records[0].value", "name server nothing.example.test. is in this zone but has no address"},
		{"record below a delegation", "PUT", sets + "txt.deleg/TXT", `{"records": [{"value": "hidden"}]}`,
			"", "txt.deleg.example.test. lies below the delegation at deleg.example.test."},
		{"address below a delegation, not glue", "PUT", sets + "www.deleg/A", `{"records": [{"value": "192.0.2.80"}]}`,
			"", "no NS record set names it"},
		{"address at a delegation, not glue", "PUT", sets + "deleg/A", `{"records": [{"value": "192.0.2.81"}]}`,
			"", "deleg.example.test. is delegated (it has an NS record set), so resolvers get a referral there and no location answers its A record set, and no NS record set names it"},
		{"alias at a delegation", "PUT", sets + "deleg/AAAA", `{"alias": "www"}`,
			"", "no NS record set names it"},
		{"alias to a missing name", "PUT", sets + "a/A", `{"alias": "nowhere"}`,
			"alias", "alias target nowhere.example.test. has no A record set"},
		{"alias to a CNAME", "PUT", sets + "a/A", `{"alias": "cn"}`,
			"alias", "alias target cn.example.test. is a CNAME"},
		{"alias into a delegation", "PUT", sets + "a/A", `{"alias": "ns1.deleg"}`,
			"alias", "is at or below the delegation at deleg.example.test."},
		{"alias loop", "PUT", sets + "alias-1/A", `{"alias": "alias-2"}`,
			"alias", "aliases form a loop"},
		{"deleting an alias's target", "DELETE", sets + "www/A", "",
			`record_sets["alias-1 A"].alias`, "alias target www.example.test. has no A record set"},
		{"deleting a delegation's glue", "DELETE", sets + "ns1.deleg/A", "",
			`record_sets["deleg NS"].records[0].value`, "must carry its address (glue)"},
		{"parent data in a hosted child", "PUT", sets + "x.hosted/TXT", `{"records": [{"value": "parent data"}]}`,
			"", `x.hosted.example.test. is in zone hosted.example.test. (zones["hosted.example.test."]), which is hosted too`},
		{"a child hosted over its parent's data", "PUT", "/v1/zones/deep.example.test", `{}`,
			`record_sets["x.deep TXT"]`, "deep.example.test. (zones[\"deep.example.test.\"]), which is hosted too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "a child hosted over its parent's data" {
				accept("PUT", sets+"x.deep/TXT", `{"records": [{"value": "parent data"}]}`)
			}
			idx := v.node.State().Index
			code, out := do(t, tc.method, base+tc.path, testToken, "application/json", tc.body)
			if code != http.StatusUnprocessableEntity {
				t.Fatalf("%d %s, want 422", code, out)
			}
			e := decodeError(t, out)
			found := false
			for _, fe := range e.Errors {
				found = found || fe.Path == tc.errPath && strings.Contains(fe.Message, tc.says)
			}
			if !found {
				t.Errorf("errors %+v lack %q: ...%s", e.Errors, tc.errPath, tc.says)
			}
			if s := v.node.State(); s.Index != idx {
				t.Fatalf("index moved from %d to %d: something was applied", idx, s.Index)
			}
		})
	}

	// The controls: the same writes, servable.
	accept("PUT", sets+"ns.lame/AAAA", `{"records": [{"value": "2001:db8::53"}]}`)
	accept("PUT", sets+"lame/NS", `{"records": [{"value": "ns.lame.example.test."}]}`)
	accept("PUT", sets+"a/A", `{"alias": "alias-2"}`)
	accept("PUT", sets+"hosted/NS", `{"records": [{"value": "ns.elsewhere.test."}]}`)
	accept("PUT", sets+"hosted/DS", `{"records": [{"value": "60485 13 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D"}]}`)
	accept("PUT", sets+"self/A", `{"records": [{"value": "192.0.2.82"}]}`)
	accept("PUT", sets+"self/NS", `{"records": [{"value": "self.example.test."}]}`)
	if code, _ := do(t, "PUT", base+sets+"hosted/A", testToken, "application/json", `{"records": [{"value": "192.0.2.83"}]}`); code != http.StatusUnprocessableEntity {
		t.Errorf("PUT an address at the delegation of the hosted child: %d, want 422", code)
	}
	accept("DELETE", sets+"a/A", "")
	if code, _ := do(t, "DELETE", base+sets+"alias-1/A", testToken, "", ""); code != http.StatusUnprocessableEntity {
		t.Errorf("DELETE alias-1, the target of alias-2: %d, want 422", code)
	}
	accept("DELETE", sets+"alias-2/A", "")
	accept("DELETE", sets+"alias-1/A", "")
	accept("DELETE", sets+"www/A", "")
}
