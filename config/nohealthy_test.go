package config

import (
	"strings"
	"testing"
)

func TestNoHealthyValidation(t *testing.T) {
	doc := func(set string) string {
		return `regions: [a]
checks: [{id: c, protocol: tcp, target: {host: 192.0.2.1, port: 1}, allow_fewer_regions: true}]
zones:
  - name: example.test
    record_sets:
      - ` + set + "\n"
	}
	ok := `{name: www, type: A, policy: multivalue, no_healthy: fallback, fallback: "203.0.113.1", records: [{value: 192.0.2.1, health_check: c}]}`
	d, err := Parse([]byte(doc(ok)))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Zones[0].RecordSets[0].Fallback; got != "203.0.113.1" { // kept as written, canonical
		t.Errorf("fallback not canonical: %q", got)
	}
	for _, tc := range []struct{ set, want string }{
		{`{name: www, type: A, no_healthy: nodata, records: [{value: 192.0.2.1}]}`, "a simple record set does not consult health checks"},
		{`{name: www, type: A, policy: failover, no_healthy: fallback, records: [{value: 192.0.2.1, role: primary, health_check: c}]}`, "fallback: required with no_healthy: fallback"},
		{`{name: www, type: A, policy: multivalue, no_healthy: fallback, fallback: nope, records: [{value: 192.0.2.1}]}`, "fallback: "},
		{`{name: www, type: A, policy: multivalue, no_healthy: never, records: [{value: 192.0.2.1}]}`, `unknown choice "never"`},
		{`{name: www, type: A, policy: multivalue, fallback: 192.0.2.9, records: [{value: 192.0.2.1}]}`, "a fallback is answered only with no_healthy: fallback"},
		{`{name: www, type: CNAME, policy: weighted, no_healthy: nodata, records: [{value: a.example., weight: 1}]}`, "a CNAME record set cannot answer no data"},
		{`{name: www, type: A, policy: nearest, no_healthy: nodata, records: [{value: 192.0.2.1, health_check: c, region: a}]}`, "the nearest policy answers every record"},
		{`{name: www, type: A, policy: nearest, no_healthy: fallback, fallback: 192.0.2.9, records: [{value: 192.0.2.1, health_check: c, region: a}]}`, "the nearest policy answers every record"},
	} {
		_, err := Parse([]byte(doc(tc.set)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.set, err, tc.want)
		}
	}
}
