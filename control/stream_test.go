package control

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// streamTable is YAML streams of parts, each with a word every problem must hold ("" for a
// stream that is valid): vigil validate (config.Parse) and the API read the same table.
var streamTable = []struct {
	name, stream, want string
}{
	{"settings then checks then zones", "regions: [a, b, c]\n---\nchecks:\n  - {id: c1, protocol: tcp, target: {host: 192.0.2.1, port: 80}}\n---\nzones:\n  - name: ex.test\n    record_sets:\n      - {name: www, type: A, policy: multivalue, records: [{value: 192.0.2.1, health_check: c1}]}\n", ""},
	{"a zone in two parts holds both", "regions: [a, b, c]\nzones:\n  - name: ex.test\n    record_sets:\n      - {name: www, type: A, records: [{value: 192.0.2.1}]}\n---\nzones:\n  - name: EX.test.\n    record_sets:\n      - {name: api, type: A, records: [{value: 192.0.2.2}]}\n", ""},
	{"comment-only parts are left out", "regions: [a, b, c]\n---\n# nothing\n---\nchecks:\n  - {id: c1, protocol: tcp, target: {host: 192.0.2.1, port: 80}}\n", ""},
	{"a later part sets regions", "regions: [a, b, c]\n---\nregions: [d]\n", "document 2 of the stream (line 2) sets regions"},
	{"a zone again with other settings", "regions: [a, b, c]\nzones:\n  - name: ex.test\n    ttl: 60\n    record_sets: []\n---\nzones:\n  - name: ex.test\n    ttl: 30\n    record_sets:\n      - {name: www, type: A, records: [{value: 192.0.2.1}]}\n", "document 2 of the stream (line 6) names zone ex.test. again with other settings"},
	{"an unknown field in the third part", "regions: [a, b, c]\n---\nchecks: []\n---\nchecks:\n  - {id: c1, protocol: tcp, colour: red, target: {host: 192.0.2.1, port: 80}}\n", "document 3 of the stream (from line 4"},
	{"a YAML error in the second part", "regions: [a, b, c]\n---\nchecks: [\n", "document 2 of the stream (from line 2"},
	{"one check id in two parts", "regions: [a, b, c]\nchecks:\n  - {id: c1, protocol: tcp, target: {host: 192.0.2.1, port: 80}}\n---\nchecks:\n  - {id: c1, protocol: tcp, target: {host: 192.0.2.2, port: 80}}\n", "duplicate"},
	{"one record set in two parts of a zone", "regions: [a, b, c]\nzones:\n  - name: ex.test\n    record_sets:\n      - {name: www, type: A, records: [{value: 192.0.2.1}]}\n---\nzones:\n  - name: ex.test\n    record_sets:\n      - {name: www, type: A, records: [{value: 192.0.2.2}]}\n", "www"},
	{"a later check gets the first part's regions", "regions: [a]\n---\nchecks:\n  - {id: c1, protocol: tcp, allow_fewer_regions: true, target: {host: 192.0.2.1, port: 80}}\n", ""},
	{"a later check's regions are checked", "regions: [a]\n---\nchecks:\n  - {id: c1, protocol: tcp, target: {host: 192.0.2.1, port: 80}}\n", "need at least 3 regions"},
}

// TestStreamValidateAgreesWithAPI: every stream of the table is valid for config.Parse (what
// vigil validate runs) exactly when PUT /v1/document accepts it, with the same problems, and
// each problem holds the table's words (the part, for a problem of one part).
func TestStreamValidateAgreesWithAPI(t *testing.T) {
	c := newCluster(t, 1)
	base := c.voters[0].url()
	for _, tc := range streamTable {
		_, perr := config.Parse([]byte(tc.stream))
		code, out := do(t, "PUT", base+"/v1/document", testToken, "application/yaml", tc.stream)
		if (perr == nil) != (code == http.StatusOK) {
			t.Errorf("%s: validate says %v, the API %d %s", tc.name, perr, code, out)
			continue
		}
		if (tc.want == "") != (perr == nil) {
			t.Errorf("%s: want problem %q, validate says %v", tc.name, tc.want, perr)
			continue
		}
		if perr == nil {
			continue
		}
		var es config.Errors
		if !errors.As(perr, &es) {
			t.Errorf("%s: validate's error is not a list of problems: %v", tc.name, perr)
			continue
		}
		got := problemStrings(es)
		api := problemStrings(decodeError(t, out).Errors)
		if !slices.Equal(got, api) {
			t.Errorf("%s: problems differ:\n validate: %q\n API:      %q", tc.name, got, api)
		}
		for _, p := range got {
			if !strings.Contains(p, tc.want) {
				t.Errorf("%s: problem %q does not say %q", tc.name, p, tc.want)
			}
		}
	}
}

func problemStrings(es config.Errors) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	slices.Sort(out)
	return out
}
