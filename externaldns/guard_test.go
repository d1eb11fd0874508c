package externaldns

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHostAllowed: loopback addresses and localhost in any spelling, and the allowed hosts;
// nothing else, a name that merely starts with localhost included.
func TestHostAllowed(t *testing.T) {
	p := &Provider{hosts: map[string]struct{}{}}
	for _, h := range []string{"edns.internal:8888", "10.1.2.3"} {
		p.hosts[canonicalHost(h)] = struct{}{}
	}
	for host, want := range map[string]bool{
		"127.0.0.1:8888": true, "127.5.6.7": true, "localhost:8888": true, "LOCALHOST.": true,
		"[::1]:8888": true, "::1": true, "[::ffff:127.0.0.1]:8888": true,
		"edns.internal": true, "EDNS.Internal.:80": true, "10.1.2.3:8888": true,
		"": false, "evil.example": false, "evil.example:8888": false, "localhost.evil.example": false,
		"127.0.0.1.evil.example": false, "10.0.0.5:8888": false, "0.0.0.0:8888": false, "[::]:8888": false,
		"edns.internal.evil.example": false,
	} {
		if got := p.hostAllowed(host); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
}

// TestWebhookMediaType: the webhook's type, version 1, in any case and spacing; not JSON,
// text, forms, another version or none.
func TestWebhookMediaType(t *testing.T) {
	for ct, want := range map[string]bool{
		MediaType: true, "application/external.dns.webhook+json; version=1": true,
		"Application/External.DNS.Webhook+JSON;version=1": true, "application/external.dns.webhook+json;version=\"1\"": true,
		"": false, "text/plain": false, "text/plain;charset=UTF-8": false, "application/json": false,
		"application/x-www-form-urlencoded": false, "multipart/form-data; boundary=x": false,
		"application/external.dns.webhook+json": false, "application/external.dns.webhook+json;version=2": false,
	} {
		if got := webhookMediaType(ct); got != want {
			t.Errorf("Content-Type %q: %v, want %v", ct, got, want)
		}
	}
}

// send makes one request with the headers given (name, value, ...) and returns its status.
func send(t *testing.T, method, url, body string, headers ...string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// counter returns the value of the counter name whose labels include labels (name, value,
// ...), summed over the others.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// The guard in front of a real provider: a cross-site form or text/plain post, a rebound
// Host, a browser's request with the right media type: each refused before its body is read,
// counted, and nothing written; the same create as ExternalDNS sends it goes through.
func TestGuardRefuses(t *testing.T) {
	v := startVigil(t)
	p, reg := startProviderWith(t, v, Config{AllowedHosts: []string{"edns.internal"}})
	create := `{"create":[{"dnsName":"web.ext.example.test","recordType":"A","targets":["192.0.2.1"]}]}`
	cases := []struct {
		name    string
		method  string
		path    string
		body    string
		headers []string
		want    int
	}{
		{"text/plain post", "POST", "/records", create, []string{"Content-Type", "text/plain;charset=UTF-8"}, http.StatusUnsupportedMediaType},
		{"form post", "POST", "/records", "create=1", []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"json post", "POST", "/records", create, []string{"Content-Type", "application/json"}, http.StatusUnsupportedMediaType},
		{"no content type", "POST", "/adjustendpoints", "[]", nil, http.StatusUnsupportedMediaType},
		{"rebound host, get", "GET", "/records", "", []string{"Host", "evil.example"}, http.StatusMisdirectedRequest},
		{"rebound host, post", "POST", "/records", create, []string{"Host", "evil.example:8888", "Content-Type", MediaType}, http.StatusMisdirectedRequest},
		{"browser with origin", "POST", "/records", create, []string{"Content-Type", MediaType, "Origin", "http://evil.example"}, http.StatusForbidden},
		{"browser with fetch metadata", "GET", "/records", "", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
	}
	for _, c := range cases {
		if got := send(t, c.method, p.URL+c.path, c.body, c.headers...); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if _, ok := v.recordSet("web", "A"); ok {
		t.Fatal("a refused request wrote web A")
	}
	for reason, want := range map[string]float64{reasonMediaType: 4, reasonHost: 2, reasonBrowser: 2} {
		if got := counter(t, reg, "vigil_externaldns_requests_refused_total", "reason", reason); got != want {
			t.Errorf("requests refused for %s: %v, want %v", reason, got, want)
		}
	}

	// Allowed: an allowed host name, and the request as ExternalDNS sends it.
	if got := send(t, "GET", p.URL+"/", "", "Host", "edns.internal:8888", "Accept", MediaType); got != http.StatusOK {
		t.Errorf("negotiation with an allowed Host: %d", got)
	}
	if got := send(t, "POST", p.URL+"/records", create, "Content-Type", MediaType, "Accept", MediaType); got != http.StatusNoContent {
		t.Fatalf("the create as ExternalDNS sends it: %d", got)
	}
	if rs, ok := v.recordSet("web", "A"); !ok || rs.ManagedBy != DefaultOwner {
		t.Fatalf("web A: %+v %v, want it made and marked %s", rs, ok, DefaultOwner)
	}
}
