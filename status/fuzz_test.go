package status

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// FuzzRequests: whatever path and query a client sends, the API answers without panicking, and
// every error is a JSON body with a message.
func FuzzRequests(f *testing.F) {
	loc := newTestLocation(f)
	demoScenario(loc)
	node := newTestNode()
	a, err := New(Options{Node: node, Location: loc})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"/v1/verdicts?state=healthy", "/v1/verdicts/web-eu-west", "/v1/answer?name=www.demo.vigil.test&type=A",
		"/v1/answer?name=%00&type=A", "/v1/answer?name=" + string(make([]byte, 300)) + "&type=TXT", "/v1/verdicts/%2e%2e",
		"/static/../page.go", "/v1/checkers?x", "/v1/answer?name=a&type=A&type=AAAA", "/readyz"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Path == "" || u.Path[0] != '/' {
			return
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL = u
		req.RequestURI = u.RequestURI()
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if rec.Code >= 400 && u.Path != "/readyz" { // /readyz answers 503 with the readiness
			var e ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%s: %d %q", target, rec.Code, rec.Body.String())
			}
		}
	})
}
