package httpguard

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestNormal(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/v1/zones": true, "/v1/zones/": true, "/v1/zones/a.test./record_sets/www/A": true,
		"*": true, "/.well-known/x": true, "/a..b/c": true,
		"": false, "v1": false, "/v1/..": false, "/v1/./x": false, "/v1//x": false, "//v1": false,
		"/v1/%2e%2e/x": false, "/v1/%2E./x": false, "/v1/.%2e": false, "/v1/a%2fb": false, "/v1/a\\..": false,
	} {
		if got := Normal(p); got != want {
			t.Errorf("Normal(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestHandlerRefusesBeforeTheRouter(t *testing.T) {
	mux := http.NewServeMux()
	hit := 0
	mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) { hit++ })
	h := Handler(mux, Limits{})
	for _, p := range []string{"/v1/zones/z/record_sets/www/../..", "/v1//zones", "/v1/%2e%2e/x"} {
		r := httptest.NewRequest(http.MethodDelete, "http://x"+p, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q, want a JSON 400", p, w.Code, w.Header().Get("Content-Type"))
		}
	}
	r := httptest.NewRequest(http.MethodGet, "http://x/v1/zones", nil)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if hit != 1 {
		t.Errorf("a normal path reached the handler %d times, want 1", hit)
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := (Limits{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (Limits{BodyTimeout: 1}).Validate(); err == nil {
		t.Error("a body timeout of 1ns was accepted")
	}
	// One network must not be able to take every connection.
	for _, l := range []Limits{{MaxConns: 16, MaxConnsPerSource: 16}, {MaxConns: 16, MaxConnsPerSource: 17}, {MaxConns: 1, MaxConnsPerSource: 1}, {MaxConnsPerSource: DefaultMaxConns}} {
		if err := l.Validate(); err == nil {
			t.Errorf("%d connections per network of %d in all accepted", l.MaxConnsPerSource, l.MaxConns)
		}
	}
	if err := (Limits{MaxConns: 16, MaxConnsPerSource: 15}).Validate(); err != nil {
		t.Errorf("15 per network of 16: %v", err)
	}
}
