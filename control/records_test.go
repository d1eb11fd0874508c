package control

import (
	"net/http"
	"strings"
	"testing"
)

// TestRecordDataRefusedAtWrite: a record value the location could not serve is refused at
// write time, with its path and the parser's words, whichever way it is written (a record
// set, a zone, a whole document), and nothing is applied; record data every location serves
// is accepted; a delete that leaves a DS without its NS is refused.
func TestRecordDataRefusedAtWrite(t *testing.T) {
	c := newCluster(t, 1)
	v := c.voters[0]
	base := v.url()
	idx := mustWrite(t, "PUT", base+"/v1/document", "application/yaml", testDoc)
	const unbalanced = "unbalanced quotes: the string opened at byte 1 is not closed"
	for _, tc := range []struct {
		name, method, path, body string
		errPath                  string
	}{
		{"record set", "PUT", "/v1/zones/example.test/record_sets/txt/TXT",
			`{"records": [{"value": "\"unbalanced"}]}`, "records[0].value"},
		{"zone", "PUT", "/v1/zones/other.test",
			`{"record_sets": [{"name": "txt", "type": "TXT", "records": [{"value": "\"unbalanced"}]}]}`, "record_sets[0].records[0].value"},
		{"document", "PUT", "/v1/document", testDoc + `      - {name: txt, type: TXT, records: [{value: '"unbalanced'}]}` + "\n",
			"zones[0].record_sets[1].records[0].value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctype := "application/json"
			if tc.name == "document" {
				ctype = "application/yaml"
			}
			code, out := do(t, tc.method, base+tc.path, testToken, ctype, tc.body)
			if code != http.StatusUnprocessableEntity {
				t.Fatalf("%d %s, want 422", code, out)
			}
			e := decodeError(t, out)
			found := false
			for _, fe := range e.Errors {
				found = found || fe.Path == tc.errPath && fe.Message == unbalanced
			}
			if !found {
				t.Errorf("errors %+v lack %s: %s", e.Errors, tc.errPath, unbalanced)
			}
			if s := v.node.State(); s.Index != idx {
				t.Fatalf("index moved from %d to %d: something was applied", idx, s.Index)
			}
		})
	}

	// Accepted: what every location serves as written.
	for _, put := range [][2]string{ // in order: the glue, then the NS, then its DS
		{"/v1/zones/example.test/record_sets/txt/TXT", `{"ttl": 0, "records": [{"value": "\"a\" \"b\\065\""}, {"value": "  as written  "}]}`},
		{"/v1/zones/example.test/record_sets/ns1.sub/A", `{"records": [{"value": "192.0.2.53"}]}`},
		{"/v1/zones/example.test/record_sets/sub/NS", `{"records": [{"value": "ns1.sub.example.test."}]}`},
		{"/v1/zones/example.test/record_sets/sub/DS", `{"records": [{"value": "60485 13 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D"}]}`},
		{"/v1/zones/example.test/record_sets/@/A", `{"alias": "www"}`},
		{"/v1/zones/example.test/record_sets/*/MX", `{"records": [{"value": "0 ."}]}`},
		{"/v1/zones/example.test/record_sets/_x._tcp/SRV", `{"records": [{"value": "0 5 443 www.example.test."}]}`},
	} {
		if code, out := do(t, "PUT", base+put[0], testToken, "application/json", put[1]); code != http.StatusOK {
			t.Errorf("PUT %s: %d %s", put[0], code, out)
		}
	}
	_, out := do(t, "GET", base+"/v1/zones/example.test", "", "", "")
	for _, want := range []string{`"ttl": 0`, `"alias": "www.example.test."`, `"value": "  as written  "`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("GET zone lacks %s:\n%s", want, out)
		}
	}

	// The NS of a delegation cannot go while its DS stays.
	code, out := do(t, "DELETE", base+"/v1/zones/example.test/record_sets/sub/NS", testToken, "", "")
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(out), "needs an NS record set") {
		t.Errorf("DELETE the NS beside a DS: %d %s, want 422", code, out)
	}
}
