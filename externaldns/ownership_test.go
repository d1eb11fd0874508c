package externaldns

import (
	"net/http"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
)

// admin returns a client of v with the unscoped write token: an operator's.
func (v *vigil) admin(t *testing.T) *client.Client {
	t.Helper()
	ctl, err := client.New(client.Config{Voters: []string{v.url}, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	return ctl
}

// Ownership, change by change: the provider creates and marks its record sets and changes
// them; it neither overwrites, updates nor deletes a record set an operator made, one it made
// before it marked what it made (until the operator marks it), one of another owner, or a
// zone's apex NS; each refusal is counted and the request answered 204.
func TestOwnership(t *testing.T) {
	v := startVigil(t)
	p, reg := startProviderWith(t, v, Config{Token: testToken, Zones: []string{"ext.example.test", "apex.example.test"}})
	other, _ := startProviderWith(t, v, Config{Owner: "cluster-b"})
	ctx := t.Context()
	admin := v.admin(t)
	hand := &config.RecordSet{Name: "hand", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.50"}}}
	if _, err := admin.PutRecordSet(ctx, "ext.example.test.", hand); err != nil {
		t.Fatal(err)
	}
	apply := func(url string, ch Changes) {
		t.Helper()
		if code := call(t, "POST", url+"/records", ch, nil); code != http.StatusNoContent {
			t.Fatalf("apply: %d, want 204", code)
		}
	}
	ep := func(name, typ string, targets ...string) *Endpoint {
		return &Endpoint{DNSName: name, RecordType: typ, Targets: targets}
	}

	// An operator's record set: not overwritten, updated or deleted.
	handEp := ep("hand.ext.example.test", "A", "192.0.2.50")
	evil := ep("hand.ext.example.test", "A", "203.0.113.66")
	apply(p.URL, Changes{Create: []*Endpoint{evil}})
	apply(p.URL, Changes{UpdateOld: []*Endpoint{handEp}, UpdateNew: []*Endpoint{evil}})
	apply(p.URL, Changes{Delete: []*Endpoint{handEp}})
	if rs, ok := v.recordSet("hand", "A"); !ok || rs.Records[0].Value != "192.0.2.50" || rs.ManagedBy != "" {
		t.Fatalf("hand A after three changes refused: %+v %v", rs, ok)
	}

	// The apex NS record set of a zone, whoever made it: not listed for adjustment, not
	// changed or deleted.
	apexNS := ep("apex.example.test", "NS", "ns1.example.net", "ns2.example.net")
	var adjusted []*Endpoint
	call(t, "POST", p.URL+"/adjustendpoints", []*Endpoint{ep("apex.example.test", "NS", "ns.evil.example")}, &adjusted)
	if len(adjusted) != 0 {
		t.Errorf("adjustment kept the apex NS: %+v", adjusted)
	}
	apply(p.URL, Changes{UpdateOld: []*Endpoint{apexNS}, UpdateNew: []*Endpoint{ep("apex.example.test", "NS", "ns.evil.example")}})
	apply(p.URL, Changes{Delete: []*Endpoint{apexNS}})
	if rs, ok := v.node.State().RecordSet("apex.example.test", "@", config.TypeNS); !ok || len(rs.Records) != 2 {
		t.Fatalf("apex NS after two changes refused: %+v %v", rs, ok)
	}

	// Its own: created and marked, updated, and a second owner cannot touch it.
	web := ep("web.ext.example.test", "A", "192.0.2.1")
	apply(p.URL, Changes{Create: []*Endpoint{web}})
	if rs, ok := v.recordSet("web", "A"); !ok || rs.ManagedBy != DefaultOwner {
		t.Fatalf("web A: %+v %v, want it marked %s", rs, ok, DefaultOwner)
	}
	web2 := ep("web.ext.example.test", "A", "192.0.2.2")
	apply(p.URL, Changes{UpdateOld: []*Endpoint{web}, UpdateNew: []*Endpoint{web2}})
	apply(other.URL, Changes{Delete: []*Endpoint{web2}})
	if rs, ok := v.recordSet("web", "A"); !ok || rs.Records[0].Value != "192.0.2.2" || rs.ManagedBy != DefaultOwner {
		t.Fatalf("web A after its update and another owner's delete: %+v %v", rs, ok)
	}
	apply(p.URL, Changes{Delete: []*Endpoint{web2}})
	if _, ok := v.recordSet("web", "A"); ok {
		t.Fatal("web A survived its owner's delete")
	}

	// A record set the provider made before it marked them: left alone until the operator
	// marks it.
	old := &config.RecordSet{Name: "old", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.9"}}}
	if _, err := admin.PutRecordSet(ctx, "ext.example.test.", old); err != nil {
		t.Fatal(err)
	}
	oldEp := ep("old.ext.example.test", "A", "192.0.2.9")
	apply(p.URL, Changes{Delete: []*Endpoint{oldEp}})
	if _, ok := v.recordSet("old", "A"); !ok {
		t.Fatal("an unmarked record set was deleted")
	}
	old.ManagedBy = DefaultOwner
	if _, err := admin.PutRecordSet(ctx, "ext.example.test.", old); err != nil {
		t.Fatal(err)
	}
	apply(p.URL, Changes{Delete: []*Endpoint{oldEp}})
	if _, ok := v.recordSet("old", "A"); ok {
		t.Fatal("a record set the operator marked was not deleted")
	}

	for _, c := range []struct {
		op, reason string
		want       float64
	}{
		{opCreate, reasonNotOwned, 1}, {opUpdate, reasonNotOwned, 1}, {opDelete, reasonNotOwned, 2},
		{opUpdate, reasonApexNS, 1}, {opDelete, reasonApexNS, 1},
	} {
		if got := counter(t, reg, "vigil_externaldns_changes_refused_total", "op", c.op, "reason", c.reason); got != c.want {
			t.Errorf("refused %s %s: %v, want %v", c.op, c.reason, got, c.want)
		}
	}
	for op, want := range map[string]float64{opCreate: 1, opUpdate: 1, opDelete: 2} {
		if got := counter(t, reg, "vigil_externaldns_changes_applied_total", "op", op); got != want {
			t.Errorf("applied %s: %v, want %v", op, got, want)
		}
	}

	// Every record set is listed, whoever owns it, so that ExternalDNS's own registry sees
	// the names it must not take.
	var listed []*Endpoint
	call(t, "GET", p.URL+"/records", nil, &listed)
	if !slices.ContainsFunc(listed, func(e *Endpoint) bool { return e.DNSName == "hand.ext.example.test" }) {
		t.Errorf("records: the operator's hand A is not listed: %+v", listed)
	}
}

// The provider runs with a token of scope write:zone=ext.example.test.,check=edns-: it
// creates, updates and deletes a health-checked record set of its zone; a zone it is told to
// manage but the token does not cover is refused by the control plane (500, nothing written),
// so the scope, not the provider, is what bounds the token.
func TestZoneScopedToken(t *testing.T) {
	v := startVigil(t)
	p, _ := startProviderWith(t, v, Config{Token: scopedToken, Zones: []string{"ext.example.test", "apex.example.test"}})
	web := &Endpoint{DNSName: "web.ext.example.test", RecordType: "A", Targets: []string{"192.0.2.1", "192.0.2.2"},
		ProviderSpecific: []ProviderSpecific{{Name: PropHealthCheck, Value: "tcp"}, {Name: PropHealthPort, Value: "443"}}}
	if code := call(t, "POST", p.URL+"/records", Changes{Create: []*Endpoint{web}}, nil); code != http.StatusNoContent {
		t.Fatalf("create with the scoped token: %d", code)
	}
	rs, ok := v.recordSet("web", "A")
	if !ok || len(rs.Records) != 2 || v.node.State().NumChecks() != 2 {
		t.Fatalf("web A: %+v %v, %d checks", rs, ok, v.node.State().NumChecks())
	}
	upd := *web
	upd.Targets = []string{"192.0.2.1"}
	if code := call(t, "POST", p.URL+"/records", Changes{UpdateOld: []*Endpoint{web}, UpdateNew: []*Endpoint{&upd}}, nil); code != http.StatusNoContent {
		t.Fatalf("update with the scoped token: %d", code)
	}
	if n := v.node.State().NumChecks(); n != 1 {
		t.Fatalf("%d checks after the update, want 1", n)
	}
	if code := call(t, "POST", p.URL+"/records", Changes{Delete: []*Endpoint{&upd}}, nil); code != http.StatusNoContent {
		t.Fatalf("delete with the scoped token: %d", code)
	}
	if _, ok := v.recordSet("web", "A"); ok || v.node.State().NumChecks() != 0 {
		t.Fatalf("web A or its checks survived the delete")
	}
	outside := &Endpoint{DNSName: "x.apex.example.test", RecordType: "A", Targets: []string{"192.0.2.3"}}
	if code := call(t, "POST", p.URL+"/records", Changes{Create: []*Endpoint{outside}}, nil); code != http.StatusInternalServerError {
		t.Errorf("create outside the token's zone: %d, want 500", code)
	}
	if _, ok := v.node.State().RecordSet("apex.example.test", "x", config.TypeA); ok {
		t.Error("a record set outside the token's zone was written")
	}
}
