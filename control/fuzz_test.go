package control

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	pathpkg "path"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/control/state"
)

// fuzzRoutes are the write routes FuzzAPIWrite sends bodies to. The cluster-membership
// routes are left out: a valid join or removal would change the fuzzing cluster itself.
var fuzzRoutes = []struct{ method, path string }{
	{"PUT", "/v1/document"},
	{"POST", "/v1/checks"},
	{"PUT", "/v1/checks/{id}"},
	{"DELETE", "/v1/checks/{id}"},
	{"POST", "/v1/zones"},
	{"PUT", "/v1/zones/{zone}"},
	{"DELETE", "/v1/zones/{zone}"},
	{"POST", "/v1/zones/{zone}/record_sets"},
	{"PUT", "/v1/zones/{zone}/record_sets/{name}/{type}"},
	{"DELETE", "/v1/zones/{zone}/record_sets/{name}/{type}"},
}

// fuzzContentTypes are the content types a fuzzed request may carry.
var fuzzContentTypes = []string{"application/json", "application/yaml", "text/plain", "", "application/json; charset=utf-8", "text/yaml; x=\""}

// fuzzPath fills the route's placeholders, in order, with the space-separated fields of
// params (path-escaped), or with names of the base document when a field is missing.
func fuzzPath(pattern, params string) string {
	defaults := []string{"web-1", "example.test.", "www", "A"}
	fields := strings.Fields(params)
	out := pattern
	for i, ph := range []string{"{id}", "{zone}", "{name}", "{type}"} {
		if !strings.Contains(out, ph) {
			continue
		}
		v := defaults[i]
		if len(fields) > 0 {
			v, fields = fields[0], fields[1:]
		}
		out = strings.Replace(out, ph, url.PathEscape(v), 1)
	}
	return out
}

// lastLogIndex is the index of the last entry in the voter's raft log.
func lastLogIndex(t testing.TB, n *Server) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(n.Stats()["last_log_index"], 10, 64)
	if err != nil {
		t.Fatalf("raft stats: last_log_index: %v", err)
	}
	return v
}

// FuzzAPIWrite sends arbitrary bodies, content types, path parameters and tokens to the
// write routes of the real API of a one-voter cluster (raft with its BoltDB log). Whatever
// the request: no panic; every refusal is a 4xx or 503 with a JSON error body, never a 500; a
// redirect only from a path that is not clean to its clean form, never from one with a dot
// segment; a refused request adds nothing to the raft log; a request without the write token
// is a 401 (unless its path is refused before any route: a dot segment, or no route); and an accepted one leaves a state whose document validates. After an accepted write
// the base document is put back, so every input starts from the same state.
func FuzzAPIWrite(f *testing.F) {
	for _, s := range []struct {
		route  uint8
		params string
		ctype  uint8
		body   string
	}{
		{0, "", 1, testDoc},
		{0, "", 0, `{"regions": ["a", "b", "c"], "checks": [{"id": "x", "protocol": "tcp", "target": {"host": "h", "port": 1}}]}`},
		{0, "", 1, "regions: [a]\nchecks:\n  - id: x\n    colour: red\n"},
		{1, "", 0, checkJSON("web-3", 8083)},
		{1, "", 0, `{"id": "x", "protocol": "http", "target": {"host": "h", "prot": 1}, "intervall": "5s"}`},
		{2, "web-1", 0, checkJSON("web-1", 9090)},
		{2, "web-2", 1, "id: web-1\nprotocol: tcp\n"},
		{3, "web-1", 3, ""},
		{4, "", 0, `{"name": "other.test.", "record_sets": [{"name": "a", "type": "A", "records": [{"value": "192.0.2.9"}]}]}`},
		{5, "example.test.", 1, "record_sets: []\n"},
		{6, "nope.test.", 3, ""},
		{7, "example.test.", 0, `{"name": "api", "type": "A", "policy": "weighted", "records": [{"value": "192.0.2.3", "weight": 1, "health_check": "web-2"}]}`},
		{8, "example.test. www A", 0, `{"records": [{"value": "192.0.2.1", "health_check": "missing"}]}`},
		{9, "example.test. www AAAA", 3, ""},
		{1, "", 0, `[1, 2]`},
		{1, "", 1, "id: a\n---\nid: b\n"},
		{0, "", 1, "&a [*a, *a]"},
	} {
		f.Add(s.route, s.params, s.ctype, uint8(0), []byte(s.body))
	}
	f.Add(uint8(1), "", uint8(0), uint8(1), []byte(checkJSON("web-3", 8083)))
	f.Add(uint8(3), "web-1", uint8(3), uint8(2), []byte(nil))

	c := newCluster(f, 1)
	node := c.voters[0].node
	api, err := NewAPI(APIConfig{Node: node, WriteTokens: []string{testToken}, OpenReads: true, MaxBodyBytes: 1 << 20, LeaderWait: c.timing.Election})
	if err != nil {
		f.Fatal(err)
	}
	serve := func(method, path, token, ctype string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://voter"+path, bytes.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		return rec
	}
	reset := func(t testing.TB) {
		t.Helper()
		if rec := serve("PUT", "/v1/document", testToken, "application/yaml", []byte(testDoc)); rec.Code != http.StatusOK {
			t.Fatalf("putting the base document back: %d %s", rec.Code, rec.Body)
		}
	}
	reset(f)

	f.Fuzz(func(t *testing.T, route uint8, params string, ctype uint8, tokenKind uint8, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := fuzzPath(rt.path, params)
		u, err := url.ParseRequestURI(path)
		if err != nil {
			t.Skip("not a request path")
		}
		token := testToken
		switch tokenKind % 3 {
		case 1:
			token = ""
		case 2:
			token = "not-" + testToken
		}
		before := lastLogIndex(t, node)
		rec := serve(rt.method, path, token, fuzzContentTypes[int(ctype)%len(fuzzContentTypes)], body)
		after := lastLogIndex(t, node)

		if rec.Code >= 200 && rec.Code < 300 {
			if token != testToken {
				t.Fatalf("%s %s without the write token: %d", rt.method, path, rec.Code)
			}
			var res state.WriteResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res.Index <= before || res.Index > after {
				t.Fatalf("%s %s: %d with answer %q (log %d to %d)", rt.method, path, rec.Code, rec.Body, before, after)
			}
			if err := node.State().Document().Validate(); err != nil {
				t.Fatalf("%s %s was accepted and left an invalid document: %v\nbody: %q", rt.method, path, err, body)
			}
			reset(t)
			return
		}
		if after != before {
			t.Fatalf("%s %s refused with %d, yet the raft log grew from %d to %d\nbody: %q", rt.method, path, rec.Code, before, after, body)
		}
		if rec.Code >= 300 && rec.Code < 400 {
			// The mux redirects a path that is not clean to its clean form; that must name
			// the same resource, so the path may have no dot segment.
			loc, err := url.Parse(rec.Header().Get("Location"))
			if err != nil || hasDotSegment(u.Path) || loc.Path != pathpkg.Clean(u.Path) && loc.Path != pathpkg.Clean(u.Path)+"/" {
				t.Fatalf("%s %s redirected to %q", rt.method, path, rec.Header().Get("Location"))
			}
			return
		}
		// Without the write token: 401, unless the path was refused before any route: a
		// dot segment (400) or no route at all (404).
		noRoute := rec.Code == http.StatusNotFound && strings.Contains(rec.Body.String(), "no such API path")
		if token != testToken && rec.Code != http.StatusUnauthorized && !(rec.Code == http.StatusBadRequest && hasDotSegment(u.Path)) && !noRoute {
			t.Fatalf("%s %s without the write token: %d %s, want 401", rt.method, path, rec.Code, rec.Body)
		}
		if rec.Code < 400 || rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s: status %d %s\nbody: %q", rt.method, path, rec.Code, rec.Body, body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: error with content type %q", rt.method, path, ct)
		}
		var e state.ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
			t.Fatalf("%s %s: %d with a body that is not a JSON error: %q (%v)", rt.method, path, rec.Code, rec.Body, err)
		}
	})
}

// TestDotSegmentPathRefused: a path with a "." or ".." segment is refused with a JSON 400, not
// redirected to the path it cleans to (a client following the redirect with its token would
// delete the whole zone). Found by FuzzAPIWrite (testdata/fuzz/FuzzAPIWrite/f4570a0611037a93).
// A double slash, as a base URL with a trailing slash makes, is still redirected to the same
// resource.
func TestDotSegmentPathRefused(t *testing.T) {
	c := newCluster(t, 1)
	v := c.voters[0]
	idx := mustWrite(t, "PUT", v.url()+"/v1/document", "application/yaml", testDoc)
	api, err := NewAPI(APIConfig{Node: v.node, WriteTokens: []string{testToken}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/zones/example.test./record_sets/x/../..", "/v1/zones/./record_sets/www/A", "/v1/zones/example.test./record_sets/x/%2e%2e/%2E%2E"} {
		req := httptest.NewRequest("DELETE", "http://voter"+p, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
			t.Errorf("DELETE %s: %d (Location %q), want 400", p, rec.Code, rec.Header().Get("Location"))
		}
		decodeError(t, rec.Body.Bytes())
	}
	if s := v.node.State(); s.Index != idx || len(s.Document().Zones) != 1 {
		t.Errorf("state moved from index %d to %d (%d zones)", idx, s.Index, len(s.Document().Zones))
	}
	// A client whose base URL ends in a slash still reaches the route.
	code, out := do(t, "GET", v.url()+"//v1/checks/web-1", "", "", "")
	if code != http.StatusOK {
		t.Errorf("GET //v1/checks/web-1: %d %s", code, out)
	}
}
