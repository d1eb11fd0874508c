package config

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// validFiles are the documents that must load: the demo and testdata/valid.
func validFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/valid/*")
	if err != nil || len(files) < 3 {
		t.Fatalf("testdata/valid: %d files, %v", len(files), err)
	}
	return append(files, "../examples/demo.yaml")
}

func mustLoad(t *testing.T, path string) *Document {
	t.Helper()
	doc, err := Load(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

func TestValidFilesLoad(t *testing.T) {
	for _, f := range validFiles(t) {
		mustLoad(t, f)
	}
}

// TestDemo asserts what vigil dev runs from: the demo document, normalised.
func TestDemo(t *testing.T) {
	doc := mustLoad(t, "../examples/demo.yaml")
	if len(doc.Checks) != 4 || len(doc.Zones) != 1 {
		t.Fatalf("demo has %d checks and %d zones, want 4 and 1", len(doc.Checks), len(doc.Zones))
	}
	web, ok := doc.CheckByID("web-eu-west")
	if !ok {
		t.Fatal("no check web-eu-west")
	}
	if !slices.Equal(web.Regions, []string{"us-east", "eu-west", "sa-east"}) {
		t.Errorf("regions default to every region, got %v", web.Regions)
	}
	if web.Target.Port != 7812 || web.Method != "GET" || web.Path != "/healthz" || web.CheckersPerRegion != 2 ||
		web.HealthyThreshold != 0.18 || web.MinReporters != 1 || !web.TLSVerify || web.Interval.Std() != time.Second ||
		web.Timeout.Std() != 500*time.Millisecond || web.FailureThreshold != 3 || web.SuccessThreshold != 2 {
		t.Errorf("web-eu-west: %+v", web)
	}
	if !slices.Equal(web.ExpectStatus, []StatusRange{{200, 399}}) {
		t.Errorf("expect_status defaults to 200-399, got %v", web.ExpectStatus)
	}
	majority, _ := doc.CheckByID("web-majority")
	if majority.MinHealthy != 2 || len(majority.Regions) != 0 {
		t.Errorf("web-majority: min_healthy %d, regions %v", majority.MinHealthy, majority.Regions)
	}
	z := doc.Zones[0]
	if z.Name != "demo.vigil.test." || z.TTL != 30 || z.SOA.RName != "hostmaster.demo.vigil.test." || z.SOA.MName != "" {
		t.Errorf("zone: name %q ttl %d soa %+v", z.Name, z.TTL, z.SOA)
	}
	want := []struct {
		name   string
		typ    RecordType
		policy Policy
	}{
		{"www.demo.vigil.test.", TypeA, PolicyFailover},
		{"api.demo.vigil.test.", TypeA, PolicyWeighted},
		{"all.demo.vigil.test.", TypeA, PolicyMultivalue},
		{"static.demo.vigil.test.", TypeA, PolicySimple},
		{"demo.vigil.test.", TypeTXT, PolicySimple},
	}
	for i, w := range want {
		rs := z.RecordSets[i]
		if rs.Name != w.name || rs.Type != w.typ || rs.Policy != w.policy || rs.EffectiveTTL(z.TTL) != 30 {
			t.Errorf("record_sets[%d] = %s %s %s ttl %d, want %s %s %s ttl 30", i, rs.Name, rs.Type, rs.Policy, rs.EffectiveTTL(z.TTL), w.name, w.typ, w.policy)
		}
	}
	if d := doc.Quorum; d.FreshnessWindow.Std() != 5*time.Second || d.Hold.Std() != 10*time.Second {
		t.Errorf("quorum: %+v", d)
	}
	if ns := doc.NameServers; ns.Domain != "ns.vigil.test." || ns.Fleet != 2048 || ns.ShardSize != 4 || ns.MaxOverlap != 2 || ns.Mode != "stateless" {
		t.Errorf("name servers default: %+v", ns)
	}
}

// TestMinimalDefaults checks every default of a check that sets only what it must.
func TestMinimalDefaults(t *testing.T) {
	doc := mustLoad(t, "testdata/valid/minimal.yaml")
	want := DefaultCheck()
	want.ID, want.Protocol = "web", ProtocolHTTP
	want.Target = Target{Host: "www.example.test", Port: 80}
	want.Regions = []string{"us-east", "eu-west", "ap-south"}
	if !reflect.DeepEqual(doc.Checks[0], want) {
		t.Errorf("got  %+v\nwant %+v", doc.Checks[0], want)
	}
	if doc.Checks[0].Interval.Std() != 10*time.Second || doc.Checks[0].Timeout.Std() != 4*time.Second {
		t.Errorf("interval %s timeout %s, want 10s and 4s", doc.Checks[0].Interval.Std(), doc.Checks[0].Timeout.Std())
	}
}

// TestFullNormalised checks the normalised form of a document that sets every field.
func TestFullNormalised(t *testing.T) {
	doc := mustLoad(t, "testdata/valid/full.yaml")
	if doc.NameServers.Domain != "ns.example.net." || doc.NameServers.Mode != "stateful" {
		t.Errorf("name servers: %+v", doc.NameServers)
	}
	api, _ := doc.CheckByID("api-https")
	if api.Method != "HEAD" || api.Target.Port != 443 || api.TLSVerify || !api.FollowRedirects || !api.Inverted ||
		api.IPVersion != 6 || api.MinReporters != 9 || api.HealthyThreshold != 0.5 || api.HostHeader != "api.example.test:8443" {
		t.Errorf("api-https: %+v", api)
	}
	if !slices.Equal(api.ExpectStatus, []StatusRange{{200, 299}, {304, 304}}) || api.Headers["X-Probe"] != "vigil" {
		t.Errorf("api-https: expect %v headers %v", api.ExpectStatus, api.Headers)
	}
	db, _ := doc.CheckByID("db.primary_1")
	if db.Target.Port != 5432 || !slices.Equal(db.Regions, []string{"sa-east"}) || !db.Disabled {
		t.Errorf("db.primary_1: %+v", db)
	}
	allUp, _ := doc.CheckByID("all-up")
	anyUp, _ := doc.CheckByID("any-up")
	if allUp.MinHealthy != 2 || anyUp.MinHealthy != 1 || !allUp.Inverted {
		t.Errorf("calculated: all-up %d, any-up %d", allUp.MinHealthy, anyUp.MinHealthy)
	}

	z, ok := doc.ZoneByName("EXAMPLE.test")
	if !ok {
		t.Fatal("ZoneByName: no example.test")
	}
	wantSOA := SOA{MName: "ns1.example.test.", RName: "admin.example.test.", Serial: 2026113001, Refresh: 3600, Retry: 600, Expire: 604800, Minimum: 60, TTL: 3600}
	if z.SOA != wantSOA || !slices.Equal(z.NameServers, []string{"ns1.example.test.", "ns2.example.test."}) {
		t.Errorf("soa %+v name servers %v", z.SOA, z.NameServers)
	}
	checkSets(t, z, []setCase{
		{"example.test.", TypeA, 120, []string{"192.0.2.10", "192.0.2.11"}},
		{"example.test.", TypeMX, 120, []string{"10 mail.example.test.", "20 mail2.example.test."}},
		{"example.test.", TypeTXT, 300, []string{"v=spf1 -all"}},
		{"_dmarc.example.test.", TypeTXT, 120, []string{"v=DMARC1; p=none"}},
		{"www.example.test.", TypeCNAME, 120, []string{"a.cdn.test.", "b.cdn.test."}},
		{"api.example.test.", TypeAAAA, 120, []string{"2001:db8::1", "2001:db8::2"}},
		{"db.example.test.", TypeA, 120, []string{"192.0.2.20"}},
	})
	second, _ := doc.ZoneByName("second.test.")
	if second.SOA.MName != "ns-a.second.test." || second.SOA.RName != "hostmaster.second.test." || second.TTL != 60 {
		t.Errorf("second.test: mname %q rname %q ttl %d (mname defaults to the apex NS set's first name)", second.SOA.MName, second.SOA.RName, second.TTL)
	}
}

// TestNormalizeIdempotent normalises every valid document once more: nothing may change.
func TestNormalizeIdempotent(t *testing.T) {
	for _, f := range validFiles(t) {
		doc := mustLoad(t, f)
		again := mustLoad(t, f)
		again.normalize()
		if !reflect.DeepEqual(doc, again) {
			t.Errorf("%s: a second normalize changed the document\nonce  %+v\ntwice %+v", f, doc, again)
		}
	}
}

// TestJSONRoundTrip writes each normalised document as JSON with encoding/json and decodes it
// back: JSON is the same format, and the result must be the same document.
func TestJSONRoundTrip(t *testing.T) {
	for _, f := range validFiles(t) {
		doc := mustLoad(t, f)
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("%s: marshal: %v", f, err)
		}
		back, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: the JSON form does not parse: %v\n%s", f, err, data)
		}
		if !reflect.DeepEqual(doc, back) {
			t.Errorf("%s: JSON round trip differs\nyaml %+v\njson %+v", f, doc, back)
		}
	}
}

func TestOwnerName(t *testing.T) {
	const apex = "example.test."
	for _, c := range []struct{ in, want string }{
		{"@", "example.test."},
		{"www", "www.example.test."},
		{"WWW.Sub", "www.sub.example.test."},
		{"www.example.test.", "www.example.test."},
		{"WWW.EXAMPLE.TEST", "www.example.test."},
		{"example.test", "example.test."},
		{"notexample.test", "notexample.test.example.test."},
		{"other.test.", "other.test."},
		{"", ""},
	} {
		if got := ownerName(c.in, apex); got != c.want {
			t.Errorf("ownerName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNameProblem(t *testing.T) {
	long63 := "a123456789b123456789c123456789d123456789e123456789f123456789abc"
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"example.test.", true},
		{"_dmarc.example.test.", true},
		{"xn--bcher-kva.test.", true},
		{long63 + ".test.", true},
		{long63 + "d.test.", false},
		{"a..test.", false},
		{"-a.test.", false},
		{"a-.test.", false},
		{"a b.test.", false},
		{"*.test.", false},
		{".", false},
		{"", false},
		// 4 labels of 63 bytes: 4*64+1 = 257 bytes on the wire.
		{long63 + "." + long63 + "." + long63 + "." + long63 + ".", false},
		// 3 labels of 63 and one of 61: exactly 255.
		{long63 + "." + long63 + "." + long63 + "." + long63[:61] + ".", true},
	} {
		if got := nameProblem(c.name); (got == "") != c.ok {
			t.Errorf("nameProblem(%q) = %q, want ok=%v", c.name, got, c.ok)
		}
	}
}
