package netlab

import "testing"

func TestDocument(t *testing.T) {
	for _, regions := range [][]string{{"us-east", "eu-west", "sa-east"}, {"us-east", "eu-west", "sa-east", "ap-south", "af-south"}} {
		doc, err := Document(regions)
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Checks) != len(regions) {
			t.Errorf("%d checks for %d regions", len(doc.Checks), len(regions))
		}
		z, ok := doc.ZoneByName(Zone)
		if !ok {
			t.Fatal("no demo zone")
		}
		rs, ok := z.RecordSet("all."+Zone, "A")
		if !ok || len(rs.Records) != len(regions) {
			t.Fatalf("all: %+v", rs)
		}
		for i, r := range rs.Records {
			if r.Value != RecordValue(i+1).String() || r.HealthCheck != CheckID(regions[i]) {
				t.Errorf("all, record %d: %+v", i, r)
			}
		}
	}
}
