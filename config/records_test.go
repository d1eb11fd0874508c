package config

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRecordKinds loads testdata/valid/records.yaml and checks what normalising keeps and
// what it rewrites: TXT and CAA as written, names canonical, TTL 0 kept, no TTL left out (the
// zone's), an alias's target absolute, wildcard owners absolute.
func TestRecordKinds(t *testing.T) {
	doc := mustLoad(t, "testdata/valid/records.yaml")
	z := doc.Zones[0]
	checkSets(t, &z, []setCase{
		{"example.test.", TypeTXT, 300, []string{`"v=spf1 -all"`, "  spaces kept  ", `"two" "strings"`}},
		{"example.test.", TypeMX, 0, []string{"0 ."}},
		{"_sip._tcp.example.test.", TypeSRV, 300, []string{"10 60 5060 sip.example.test.", "20 0 5060 ."}},
		{"example.test.", TypeCAA, 300, []string{`0 issue "letsencrypt.org"`, "128 iodef mailto:security@example.test"}},
		{"1.2.example.test.", TypePTR, 300, []string{"host.example.test."}},
		{"sub.example.test.", TypeDS, 300, []string{"60485 13 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D"}},
		{"*.example.test.", TypeA, 300, []string{"192.0.2.10", "192.0.2.11"}},
		{"*.eu.example.test.", TypeCNAME, 300, []string{"www.example.test."}},
	})
	alias, ok := z.RecordSet("example.test.", TypeA)
	if !ok || alias.Alias != "www.example.test." || len(alias.Records) != 0 || alias.TTL != nil {
		t.Errorf("apex alias: %+v", alias)
	}
}

// setCase is a record set a test expects: its TTL as served and its values as normalised.
type setCase struct {
	name   string
	typ    RecordType
	ttl    uint32
	values []string
}

// checkSets reports each record set of z that is missing or differs from its case.
func checkSets(t *testing.T, z *Zone, cases []setCase) {
	t.Helper()
	for _, c := range cases {
		rs, ok := z.RecordSet(c.name, c.typ)
		if !ok {
			t.Errorf("no record set %s %s", c.name, c.typ)
			continue
		}
		var values []string
		for _, r := range rs.Records {
			values = append(values, r.Value)
		}
		if rs.EffectiveTTL(z.TTL) != c.ttl || !slices.Equal(values, c.values) {
			t.Errorf("%s %s: ttl %d values %q, want ttl %d values %q", c.name, c.typ, rs.EffectiveTTL(z.TTL), values, c.ttl, c.values)
		}
	}
}

// TestManagedByRoundTrips: a record set's managed_by survives YAML, JSON and YAML again, and
// a record set without it writes none.
func TestManagedByRoundTrips(t *testing.T) {
	doc, err := Parse([]byte(`regions: [us-east, eu-west, ap-south]
zones:
  - name: example.test
    name_servers: [ns1.example.net.]
    record_sets:
      - {name: web, type: A, managed_by: external-dns, records: [{value: 192.0.2.1}]}
      - {name: hand, type: A, records: [{value: 192.0.2.2}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"managed_by"`); n != 1 {
		t.Fatalf("JSON holds managed_by %d times, want once: %s", n, data)
	}
	again, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	z := again.Zones[0]
	if rs, ok := z.RecordSet("web.example.test.", TypeA); !ok || rs.ManagedBy != "external-dns" {
		t.Errorf("web A after the round trip: %+v", rs)
	}
	if rs, ok := z.RecordSet("hand.example.test.", TypeA); !ok || rs.ManagedBy != "" {
		t.Errorf("hand A after the round trip: %+v", rs)
	}
}
