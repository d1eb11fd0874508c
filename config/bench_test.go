package config

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// largeDocument builds a valid document of the size a busy control plane holds: 5 regions,
// 4,000 probed and 1,000 calculated checks, and 100 zones of 50 record sets with 3 records.
func largeDocument() *Document {
	doc := DefaultDocument()
	doc.Regions = []string{"us-east", "us-west", "eu-west", "ap-south", "sa-east"}
	for i := range 4000 {
		c := DefaultCheck()
		c.ID = fmt.Sprintf("web-%d", i)
		c.Protocol = ProtocolHTTPS
		c.Target = Target{Host: fmt.Sprintf("web%d.example.test", i)}
		c.Path = "/healthz"
		doc.Checks = append(doc.Checks, c)
	}
	for i := range 1000 {
		doc.Checks = append(doc.Checks, Check{ID: fmt.Sprintf("all-%d", i), Protocol: ProtocolCalculated,
			Children: []string{fmt.Sprintf("web-%d", 4*i), fmt.Sprintf("web-%d", 4*i+1), fmt.Sprintf("web-%d", 4*i+2), fmt.Sprintf("web-%d", 4*i+3)}})
	}
	for z := range 100 {
		zone := DefaultZone()
		zone.Name = fmt.Sprintf("zone%d.example.test", z)
		for s := range 50 {
			rs := RecordSet{Name: fmt.Sprintf("host%d", s), Type: TypeA, Policy: PolicyMultivalue}
			for r := range 3 {
				rs.Records = append(rs.Records, Record{Value: fmt.Sprintf("192.0.%d.%d", s, r+1), HealthCheck: fmt.Sprintf("all-%d", (z*50+s)%1000)})
			}
			zone.RecordSets = append(zone.RecordSets, rs)
		}
		doc.Zones = append(doc.Zones, zone)
	}
	doc.normalize()
	return &doc
}

func TestLargeDocumentValid(t *testing.T) {
	if err := largeDocument().Validate(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkValidateLarge measures Validate alone on the large document.
func BenchmarkValidateLarge(b *testing.B) {
	doc := largeDocument()
	b.ReportAllocs()
	for b.Loop() {
		if err := doc.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeLarge measures Decode (field walk, YAML decoding, normalising) of the same
// document in its JSON form, for comparison with BenchmarkValidateLarge.
func BenchmarkDecodeLarge(b *testing.B) {
	data, err := json.Marshal(largeDocument())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseDemo measures a whole Parse of examples/demo.yaml.
func BenchmarkParseDemo(b *testing.B) {
	data, err := os.ReadFile("../examples/demo.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// aliasBudgetDoc returns a valid document whose aliases expand to just under the alias budget
// (100,000 values): a record set of 200 records, named again by 149 more record sets. It is
// the costliest small document a writer can send a voter.
func aliasBudgetDoc() []byte {
	var b strings.Builder
	b.WriteString("regions: [us-east]\nzones:\n- name: z.test\n  record_sets:\n  - name: a0\n    type: A\n    records: &r\n")
	for i := range 200 {
		fmt.Fprintf(&b, "    - {value: 192.0.2.%d}\n", i%250+1)
	}
	for i := 1; i < 150; i++ {
		fmt.Fprintf(&b, "  - {name: a%d, type: A, records: *r}\n", i)
	}
	return []byte(b.String())
}

// BenchmarkDecodeAliasBudget: what decoding the costliest small document of aliases costs (the
// control API's write limit, MaxDecodes, bounds how many a voter decodes at once).
func BenchmarkDecodeAliasBudget(b *testing.B) {
	doc := aliasBudgetDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}
