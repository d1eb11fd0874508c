package status

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPageServed: the page, its script and its stylesheet come from the binary, with a
// content security policy that allows nothing from elsewhere.
func TestPageServed(t *testing.T) {
	a, _, _ := newTestAPI(t, nil, nil)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `data-refresh-ms="2000"`) || !strings.Contains(body, `<script src="/static/app.js"`) {
		t.Fatalf("page: %d %v\n%s", rec.Code, rec.Header(), body)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("csp %q", csp)
	}
	for _, ext := range []string{"http://", "https://", "//fonts", "cdn"} {
		if strings.Contains(body, ext) {
			t.Errorf("page refers to %q", ext)
		}
	}
	for file, ctype := range map[string]string{"app.js": "javascript", "style.css": "text/css"} {
		code, b := get(t, a, "/static/"+file)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/static/"+file, nil))
		if code != 200 || len(b) < 500 || !strings.Contains(rec.Header().Get("Content-Type"), ctype) {
			t.Errorf("%s: %d %q (%d bytes)", file, code, rec.Header().Get("Content-Type"), len(b))
		}
		if strings.Contains(string(b), "http://") || strings.Contains(string(b), "https://") {
			t.Errorf("%s refers to another origin", file)
		}
	}
	for _, p := range []string{"/static/index.html", "/static/nope.js", "/static/"} {
		if code, _ := get(t, a, p); code != 404 {
			t.Errorf("%s: %d", p, code)
		}
	}
}
