package config

import (
	"slices"
	"testing"
)

func TestLookups(t *testing.T) {
	doc := mustLoad(t, "testdata/valid/full.yaml")
	if c, ok := doc.CheckByID("web"); !ok || c.Target.Host != "192.0.2.10" {
		t.Errorf("CheckByID(web) = %+v, %v", c, ok)
	}
	if _, ok := doc.CheckByID("nope"); ok {
		t.Error("CheckByID found a check that does not exist")
	}
	if idx := doc.CheckIndex(); len(idx) != len(doc.Checks) || idx["any-up"] != 3 {
		t.Errorf("CheckIndex = %v", idx)
	}
	for _, c := range []struct {
		qname, zone string
		ok          bool
	}{
		{"www.example.test.", "example.test.", true},
		{"EXAMPLE.TEST", "example.test.", true},
		{"deep.down.second.test", "second.test.", true},
		{"example.org.", "", false},
		{"test.", "", false},
		{"notexample.test.", "", false},
	} {
		z, ok := doc.ZoneFor(c.qname)
		if ok != c.ok || ok && z.Name != c.zone {
			t.Errorf("ZoneFor(%q) = %v, %v; want %q, %v", c.qname, z, ok, c.zone, c.ok)
		}
	}
	z, _ := doc.ZoneByName("example.test")
	if rs, ok := z.RecordSet("WWW.example.test", TypeCNAME); !ok || len(rs.Records) != 2 {
		t.Errorf("RecordSet(www CNAME) = %+v, %v", rs, ok)
	}
	if _, ok := z.RecordSet("www.example.test.", TypeA); ok {
		t.Error("RecordSet found www A, which does not exist")
	}
	for name, want := range map[string]bool{
		"example.test.":         true,  // the apex
		"_dmarc.example.test.":  true,  // owns a set
		"nothing.example.test.": false, // NXDOMAIN
	} {
		if got := z.NameExists(name); got != want {
			t.Errorf("NameExists(%q) = %v, want %v", name, got, want)
		}
	}
	// An empty non-terminal exists: sub.example.test. owns nothing, a.sub.example.test. does.
	z.RecordSets = append(z.RecordSets, RecordSet{Name: "a.sub.example.test.", Type: TypeA, Records: []Record{{Value: "192.0.2.1"}}})
	if !z.NameExists("sub.example.test.") {
		t.Error("an empty non-terminal should exist (NODATA, not NXDOMAIN)")
	}
	if c, _ := doc.CheckByID("any-up"); c.Probed() {
		t.Error("a calculated check is not probed")
	}
	if c, _ := doc.CheckByID("db.primary_1"); !c.Probed() {
		t.Error("a tcp check is probed")
	}
}

// TestEvalOrder checks that every calculated check comes after its children, and that a
// cycle leaves its members out instead of looping.
func TestEvalOrder(t *testing.T) {
	doc := mustLoad(t, "testdata/valid/full.yaml")
	order := doc.EvalOrder()
	if len(order) != len(doc.Checks) {
		t.Fatalf("EvalOrder = %v, want all %d checks", order, len(doc.Checks))
	}
	for i, id := range order {
		c, _ := doc.CheckByID(id)
		for _, child := range c.Children {
			if j := slices.Index(order, child); j < 0 || j > i {
				t.Errorf("%s at %d before its child %s at %d: %v", id, i, child, j, order)
			}
		}
	}
	cyclic := Document{Checks: []Check{
		{ID: "a", Protocol: ProtocolCalculated, Children: []string{"b"}},
		{ID: "b", Protocol: ProtocolCalculated, Children: []string{"a"}},
		{ID: "c", Protocol: ProtocolCalculated, Children: []string{"d"}},
		{ID: "d", Protocol: ProtocolTCP},
	}}
	if got := cyclic.EvalOrder(); !slices.Equal(got, []string{"d", "c"}) {
		t.Errorf("EvalOrder with a cycle = %v, want [d c]", got)
	}
}
