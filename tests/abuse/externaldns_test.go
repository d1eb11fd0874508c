package abuse

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/externaldns"
	"github.com/vigil-dns/vigil/internal/httpguard"
)

// ednsDoc is what `vigil apply` put: the zone the provider manages, its name servers as an
// NS record set at the apex, and a record set of the operator's.
const ednsDoc = `regions: [us-east, eu-west, sa-east]
zones:
  - name: k8s.example.test
    record_sets:
      - {name: "@", type: NS, records: [{value: ns1.example.net.}, {value: ns2.example.net.}]}
      - {name: www, type: A, records: [{value: 192.0.2.80}]}
`

// ednsScope is the provider's token scope: its zone, whole, and the checks it names.
const ednsScope = "write:zone=k8s.example.test.,check=edns-"

// ednsRig is a real voter, a second API of it that knows only the provider's zone-scoped
// token, and the provider serving on loopback as `vigil externaldns` serves it.
type ednsRig struct {
	v   *voter
	url string // the provider's
	reg *prometheus.Registry
}

func startEDNS(t *testing.T) *ednsRig {
	t.Helper()
	v := startVoter(t)
	client := &http.Client{Timeout: 10 * time.Second}
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+writeToken) }
	if code, out := send(t, client, v.base, writeReq{"PUT", "/v1/document", "application/yaml", ednsDoc}, bearer); code != http.StatusOK {
		t.Fatalf("apply the document: %d %s", code, out)
	}
	if code, out := send(t, client, v.base, writeReq{"PUT", "/v1/zones/k8s.example.test./record_sets/api/A", "application/json",
		`{"records": [{"value": "192.0.2.81"}]}`}, bearer); code != http.StatusOK {
		t.Fatalf("put api A: %d %s", code, out)
	}

	scope, err := control.ParseScope(ednsScope)
	if err != nil {
		t.Fatal(err)
	}
	secret, line, err := control.NewToken("externaldns", scope)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := control.ParseTokenLine(line)
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := control.NewAPI(control.APIConfig{Node: v.node, Tokens: []control.Token{tok}, Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiSrv := &http.Server{Handler: scoped, ReadHeaderTimeout: 5 * time.Second}
	go apiSrv.Serve(apiLn)
	t.Cleanup(func() { apiSrv.Close() })

	reg := prometheus.NewRegistry()
	p, err := externaldns.New(externaldns.Config{Voters: []string{"http://" + apiLn.Addr().String()}, Token: secret,
		Zones: []string{"k8s.example.test"}, Registerer: reg, Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpguard.Server(p, httpguard.Limits{})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &ednsRig{v: v, url: "http://" + ln.Addr().String(), reg: reg}
}

// zone returns the zone's record sets as JSON, to compare before and after.
func (r *ednsRig) zone(t *testing.T) string {
	t.Helper()
	var sets []config.RecordSet
	for rs := range r.v.node.State().RecordSets("k8s.example.test") {
		sets = append(sets, *rs)
	}
	b, err := json.Marshal(sets)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hook sends one request to the provider: the body, the Host (empty: the listener's
// address) and headers (name, value, ...). It returns the status.
func (r *ednsRig) hook(t *testing.T, method, path, host, body string, headers ...string) int {
	t.Helper()
	req, err := http.NewRequest(method, r.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// ednsChanges encodes a webhook ApplyChanges body.
func ednsChanges(t *testing.T, ch externaldns.Changes) string {
	t.Helper()
	b, err := json.Marshal(ch)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ednsEndpoint(name, typ string, targets ...string) *externaldns.Endpoint {
	return &externaldns.Endpoint{DNSName: name, RecordType: typ, Targets: targets}
}

// TestAbuseExternalDNSProvider: the ExternalDNS webhook provider (real voter with its BoltDB
// log, the provider on a loopback socket with a token of scope
// write:zone=k8s.example.test.,check=edns-) attacked three ways: (a) what a web page can post
// across sites without a preflight (text/plain, a form, multipart, no Content-Type; with and
// without Origin), (b) a DNS-rebound name in Host, (c) well-formed webhook requests that
// change or delete the zone's apex NS, a record set from `vigil apply` and one from the API.
// Nothing of (a) to (c) may change the zone or grow the raft log. The control (d): the same
// changes as ExternalDNS sends them create, update and delete the provider's own record set.
func TestAbuseExternalDNSProvider(t *testing.T) {
	r := startEDNS(t)
	apexNS := ednsEndpoint("k8s.example.test", "NS", "ns1.example.net", "ns2.example.net")
	evilNS := ednsEndpoint("k8s.example.test", "NS", "ns.evil.example")
	www := ednsEndpoint("www.k8s.example.test", "A", "192.0.2.80")
	api := ednsEndpoint("api.k8s.example.test", "A", "192.0.2.81")
	evilA := func(name string) *externaldns.Endpoint { return ednsEndpoint(name, "A", "203.0.113.66") }
	attack := ednsChanges(t, externaldns.Changes{
		Create:    []*externaldns.Endpoint{evilA("phish.k8s.example.test")},
		UpdateOld: []*externaldns.Endpoint{apexNS},
		UpdateNew: []*externaldns.Endpoint{evilNS},
		Delete:    []*externaldns.Endpoint{www},
	})
	before, index, configIndex := r.zone(t), r.v.logIndex(t), r.v.node.State().Index

	// (a) Cross-site posts.
	const boundary = "xYzZY"
	multipart := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n" + attack + "\r\n--" + boundary + "--\r\n"
	bodies := []struct{ ctype, body string }{
		{"text/plain;charset=UTF-8", attack},
		{"text/plain", attack},
		{"application/x-www-form-urlencoded", attack + "="},
		{"multipart/form-data; boundary=" + boundary, multipart},
		{"", attack},
	}
	var triedA, throughA int
	codesA := map[int]int{}
	for _, b := range bodies {
		for _, origin := range []string{"", "http://evil.example"} {
			for _, path := range []string{"/records", "/adjustendpoints"} {
				var h []string
				if b.ctype != "" {
					h = append(h, "Content-Type", b.ctype)
				}
				if origin != "" {
					h = append(h, "Origin", origin, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors")
				}
				code := r.hook(t, "POST", path, "", b.body, h...)
				triedA++
				codesA[code]++
				if code/100 == 2 {
					throughA++
				}
			}
		}
	}
	if got := r.zone(t); got != before || r.v.logIndex(t) != index || throughA != 0 {
		t.Fatalf("(a) cross-site posts: %d of %d answered 2xx, zone changed %v, raft log %d → %d", throughA, triedA, got != before, index, r.v.logIndex(t))
	}

	// (b) A rebound name: the page's own name, now pointing at 127.0.0.1, in Host; the
	// request otherwise as ExternalDNS sends it.
	var triedB, throughB int
	codesB := map[int]int{}
	for _, host := range []string{"evil.example", "evil.example:8888", "localhost.evil.example", "127.0.0.1.evil.example", "rebind.evil.example."} {
		for _, req := range []struct{ method, path, body string }{
			{"GET", "/", ""}, {"GET", "/records", ""}, {"POST", "/adjustendpoints", "[]"}, {"POST", "/records", attack},
		} {
			h := []string{"Accept", externaldns.MediaType}
			if req.method == "POST" {
				h = append(h, "Content-Type", externaldns.MediaType)
			}
			code := r.hook(t, req.method, req.path, host, req.body, h...)
			triedB++
			codesB[code]++
			if code/100 == 2 {
				throughB++
			}
		}
	}
	if got := r.zone(t); got != before || r.v.logIndex(t) != index || throughB != 0 {
		t.Fatalf("(b) rebound Host: %d of %d answered 2xx, zone changed %v", throughB, triedB, got != before)
	}

	// (c) Well-formed webhook requests against record sets the provider did not create.
	hostile := []externaldns.Changes{
		{UpdateOld: []*externaldns.Endpoint{apexNS}, UpdateNew: []*externaldns.Endpoint{evilNS}},
		{Delete: []*externaldns.Endpoint{apexNS}},
		{Create: []*externaldns.Endpoint{evilNS}},
		{UpdateOld: []*externaldns.Endpoint{www}, UpdateNew: []*externaldns.Endpoint{evilA("www.k8s.example.test")}},
		{Delete: []*externaldns.Endpoint{www}},
		{Create: []*externaldns.Endpoint{evilA("www.k8s.example.test")}},
		{UpdateOld: []*externaldns.Endpoint{api}, UpdateNew: []*externaldns.Endpoint{evilA("api.k8s.example.test")}},
		{Delete: []*externaldns.Endpoint{api}},
		{Create: []*externaldns.Endpoint{evilA("api.k8s.example.test")}},
	}
	hookOK := func(body string) int {
		return r.hook(t, "POST", "/records", "", body, "Content-Type", externaldns.MediaType, "Accept", externaldns.MediaType)
	}
	for _, ch := range hostile {
		if code := hookOK(ednsChanges(t, ch)); code != http.StatusNoContent {
			t.Errorf("(c) %+v: %d, want 204 (refused changes are skipped, not retried)", ch, code)
		}
	}
	refused := counter(t, r.reg, "vigil_externaldns_changes_refused_total", nil)
	apexRefused := counter(t, r.reg, "vigil_externaldns_changes_refused_total", map[string]string{"reason": "apex_ns"})
	// The provider's reads before each change are linearizable (a raft barrier each, which
	// grows the log): the configuration's index says whether anything was written.
	if got := r.zone(t); got != before || r.v.node.State().Index != configIndex || refused != float64(len(hostile)) {
		t.Fatalf("(c) changes of others' record sets: zone changed %v, configuration index %d → %d, %v refused of %d",
			got != before, configIndex, r.v.node.State().Index, refused, len(hostile))
	}

	// (d) Control: the provider's own record set, created, updated and deleted by requests as
	// ExternalDNS sends them; and the attack's body itself, sent so, applies what is its own
	// to make (the new name) and nothing else.
	app := ednsEndpoint("app.k8s.example.test", "A", "192.0.2.90")
	app2 := ednsEndpoint("app.k8s.example.test", "A", "192.0.2.91")
	app2.ProviderSpecific = []externaldns.ProviderSpecific{{Name: externaldns.PropHealthCheck, Value: "tcp"}, {Name: externaldns.PropHealthPort, Value: "443"}}
	steps := []struct {
		ch   externaldns.Changes
		want func(rs config.RecordSet, ok bool) bool
	}{
		{externaldns.Changes{Create: []*externaldns.Endpoint{app}}, func(rs config.RecordSet, ok bool) bool {
			return ok && rs.ManagedBy == externaldns.DefaultOwner && rs.Records[0].Value == "192.0.2.90"
		}},
		{externaldns.Changes{UpdateOld: []*externaldns.Endpoint{app}, UpdateNew: []*externaldns.Endpoint{app2}}, func(rs config.RecordSet, ok bool) bool {
			return ok && rs.Records[0].Value == "192.0.2.91" && rs.Records[0].HealthCheck != ""
		}},
		{externaldns.Changes{Delete: []*externaldns.Endpoint{app2}}, func(_ config.RecordSet, ok bool) bool { return !ok }},
	}
	throughD := 0
	for i, s := range steps {
		code := hookOK(ednsChanges(t, s.ch))
		rs, ok := r.v.node.State().RecordSet("k8s.example.test", "app", config.TypeA)
		if code != http.StatusNoContent || !s.want(rs, ok) {
			t.Fatalf("(d) control step %d: %d, app A %+v %v", i, code, rs, ok)
		}
		throughD++
	}
	if n := r.v.node.State().NumChecks(); n != 0 {
		t.Errorf("(d) %d checks left after the delete", n)
	}
	if code := hookOK(attack); code != http.StatusNoContent {
		t.Fatalf("(d) the attack's body as ExternalDNS sends it: %d", code)
	}
	if _, ok := r.v.node.State().RecordSet("k8s.example.test", "phish", config.TypeA); !ok {
		t.Fatal("(d) the attack's body sent properly did not create its new name: the refusals above measure nothing")
	}
	if ns, ok := r.v.node.State().RecordSet("k8s.example.test", "@", config.TypeNS); !ok || len(ns.Records) != 2 {
		t.Fatalf("(d) the apex NS after the attack's body sent properly: %+v %v", ns, ok)
	}
	if _, ok := r.v.node.State().RecordSet("k8s.example.test", "www", config.TypeA); !ok {
		t.Fatal("(d) www A went with the attack's body sent properly")
	}

	row(t, "Cross-site POSTs to the ExternalDNS webhook as a page sends them without preflight: text/plain, form, multipart, no Content-Type, with and without Origin, to /records and /adjustendpoints",
		plural(triedA, "request"), fmt.Sprintf("0 (%s); zone and raft log unchanged; control: the same body as %s applies its create", answerCodes(codesA), externaldns.MediaType))
	row(t, "DNS rebinding: the webhook's requests with a foreign Host (evil.example, localhost.evil.example, 127.0.0.1.evil.example, ...)",
		plural(triedB, "request"), fmt.Sprintf("0 (%s); zone and raft log unchanged", answerCodes(codesB)))
	row(t, "Well-formed webhook changes of record sets the provider did not create: update, delete and overwrite of the apex NS, of a `vigil apply` record set and of an API one",
		plural(len(hostile), "change"), fmt.Sprintf("0 (%v refused and counted, %v of them apex NS); zone and configuration index unchanged; control: the provider's own record set created, updated and deleted (%d of %d), token scope %s",
			refused, apexRefused, throughD, len(steps), ednsScope))
}
