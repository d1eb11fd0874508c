package externaldns

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// call sends one webhook request as ExternalDNS does and decodes the answer into out.
func call(t *testing.T, method, url string, body, out any) int {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(method, url, bytes.NewReader(b))
	req.Header.Set("Accept", MediaType)
	if body != nil {
		req.Header.Set("Content-Type", MediaType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if ct := resp.Header.Get("Content-Type"); ct != MediaType {
			t.Errorf("%s %s: content type %q", method, url, ct)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func (v *vigil) recordSet(name, typ string) (config.RecordSet, bool) {
	return v.node.State().RecordSet("ext.example.test", name, config.RecordType(typ))
}

// The protocol, step by step with ExternalDNS's published JSON: negotiation gives the zones;
// adjustment canonicalises properties and leaves out what cannot be stored; a create with
// health annotations makes a check of each target and a multivalue record set naming them;
// the records list shows the same properties back (so ExternalDNS plans no change); an
// update drops the checks of a removed target; a delete removes the record set and its
// checks.
func TestWebhookProtocol(t *testing.T) {
	v := startVigil(t)
	p := startProvider(t, v)

	var filter DomainFilter
	if code := call(t, "GET", p.URL+"/", nil, &filter); code != http.StatusOK || !slices.Equal(filter.Include, []string{"ext.example.test"}) {
		t.Fatalf("negotiate: %d %+v", code, filter)
	}

	web := &Endpoint{DNSName: "web.ext.example.test", RecordType: "A", Targets: []string{"192.0.2.1", "192.0.2.2"}, RecordTTL: 30,
		ProviderSpecific: []ProviderSpecific{{Name: PropHealthCheck, Value: "http"}, {Name: PropHealthPath, Value: "/healthz"}, {Name: PropHealthPort, Value: "8080"}}}
	txt := &Endpoint{DNSName: "web.ext.example.test", RecordType: "TXT", Targets: []string{`"heritage=external-dns,external-dns/owner=test"`}}
	var adjusted []*Endpoint
	call(t, "POST", p.URL+"/adjustendpoints", []*Endpoint{web, txt,
		{DNSName: "x.other.test", RecordType: "A", Targets: []string{"192.0.2.9"}},
		{DNSName: "x.ext.example.test", RecordType: "NAPTR", Targets: []string{"x"}},
		{DNSName: "y.ext.example.test", RecordType: "A", Targets: []string{"192.0.2.9"}, ProviderSpecific: []ProviderSpecific{{Name: PropHealthCheck, Value: "icmp"}}},
		{DNSName: "z.ext.example.test", RecordType: "A", Targets: []string{"not-an-address"}},
	}, &adjusted)
	if len(adjusted) != 2 {
		t.Fatalf("adjusted: %d endpoints, want web A and TXT: %+v", len(adjusted), adjusted)
	}
	wantProps := []ProviderSpecific{{Name: PropHealthCheck, Value: "http"}, {Name: PropHealthPath, Value: "/healthz"},
		{Name: PropHealthPort, Value: "8080"}, {Name: PropPolicy, Value: "multivalue"}}
	if !slices.Equal(adjusted[0].ProviderSpecific, wantProps) {
		t.Fatalf("adjusted properties: %+v", adjusted[0].ProviderSpecific)
	}

	if code := call(t, "POST", p.URL+"/records", Changes{Create: adjusted}, nil); code != http.StatusNoContent {
		t.Fatalf("apply create: %d", code)
	}
	rs, ok := v.recordSet("web", "A")
	if !ok || rs.Policy != config.PolicyMultivalue || len(rs.Records) != 2 || *rs.TTL != 30 {
		t.Fatalf("web A: %+v %v", rs, ok)
	}
	for _, r := range rs.Records {
		c, ok := v.node.State().Check(r.HealthCheck)
		if !ok || c.Protocol != config.ProtocolHTTP || c.Target.Host != r.Value || c.Target.Port != 8080 || c.Path != "/healthz" {
			t.Fatalf("check of %s: %+v %v", r.Value, c, ok)
		}
	}
	if rs, ok := v.recordSet("web", "TXT"); !ok || rs.Records[0].Value != txt.Targets[0] {
		t.Fatalf("web TXT: %+v", rs)
	}

	var listed []*Endpoint
	call(t, "GET", p.URL+"/records", nil, &listed)
	var got *Endpoint
	for _, e := range listed {
		if e.DNSName == "web.ext.example.test" && e.RecordType == "A" {
			got = e
		}
	}
	if got == nil || !slices.Equal(got.ProviderSpecific, wantProps) || got.RecordTTL != 30 || !slices.Equal(got.Targets, web.Targets) {
		t.Fatalf("records: %+v", got)
	}

	oldCheck := rs.Records[1].HealthCheck
	upd := *adjusted[0]
	upd.Targets = []string{"192.0.2.1"}
	if code := call(t, "POST", p.URL+"/records", Changes{UpdateOld: []*Endpoint{adjusted[0]}, UpdateNew: []*Endpoint{&upd}}, nil); code != http.StatusNoContent {
		t.Fatalf("apply update: %d", code)
	}
	if rs, _ := v.recordSet("web", "A"); len(rs.Records) != 1 {
		t.Fatalf("after the update: %+v", rs)
	}
	if _, ok := v.node.State().Check(oldCheck); ok {
		t.Error("the removed target's check is still there")
	}

	if code := call(t, "POST", p.URL+"/records", Changes{Delete: []*Endpoint{&upd, adjusted[1]}}, nil); code != http.StatusNoContent {
		t.Fatalf("apply delete: %d", code)
	}
	if _, ok := v.recordSet("web", "A"); ok {
		t.Error("web A survived its delete")
	}
	if n := v.node.State().NumChecks(); n != 0 {
		t.Errorf("%d checks left after the delete", n)
	}

	// A change the control plane refuses is a 500, which ExternalDNS retries.
	bad := &Endpoint{DNSName: "bad.ext.example.test", RecordType: "A", Targets: []string{"not-an-address"}}
	if code := call(t, "POST", p.URL+"/records", Changes{Create: []*Endpoint{bad}}, nil); code != http.StatusInternalServerError {
		t.Errorf("refused change: %d", code)
	}
}
