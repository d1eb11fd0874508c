package control

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
)

// TestBadInput: every kind of bad request gets its 4xx, a JSON error listing every problem,
// and changes nothing.
func TestBadInput(t *testing.T) {
	c := newCluster(t, 1)
	v := c.voters[0]
	base := v.url()
	idx := mustWrite(t, "PUT", base+"/v1/document", "application/yaml", testDoc)

	huge := `{"id": "big", "protocol": "http", "path": "/` + strings.Repeat("a", 2<<20) + `"}`
	cases := []struct {
		name, method, path, token, ctype, body string
		code                                   int
		paths                                  []string // error paths that must be listed
	}{
		{"no token", "POST", "/v1/checks", "", "application/json", checkJSON("x", 1), http.StatusUnauthorized, nil},
		{"wrong token", "POST", "/v1/checks", "nope", "application/json", checkJSON("x", 1), http.StatusUnauthorized, nil},
		{"no token delete", "DELETE", "/v1/checks/web-1", "", "", "", http.StatusUnauthorized, nil},
		{"wrong content type", "PUT", "/v1/document", testToken, "text/plain", testDoc, http.StatusUnsupportedMediaType, nil},
		{"no content type", "POST", "/v1/checks", testToken, "", checkJSON("x", 1), http.StatusUnsupportedMediaType, nil},
		{"oversized", "POST", "/v1/checks", testToken, "application/json", huge, http.StatusRequestEntityTooLarge, nil},
		{"unknown fields", "POST", "/v1/checks", testToken, "application/json",
			`{"id": "x", "protocol": "http", "target": {"host": "h", "prot": 1}, "intervall": "5s"}`,
			http.StatusBadRequest, []string{"target.prot", "intervall"}},
		{"unknown document fields", "PUT", "/v1/document", testToken, "application/yaml",
			"regions: [a]\nchecks:\n  - id: x\n    colour: red\nzonez: []\n", http.StatusBadRequest, []string{"checks[0].colour", "zonez"}},
		{"not an object", "POST", "/v1/checks", testToken, "application/json", `[1, 2]`, http.StatusBadRequest, []string{""}},
		{"two YAML documents", "POST", "/v1/checks", testToken, "application/yaml", "id: a\n---\nid: b\n", http.StatusBadRequest, []string{""}},
		{"broken JSON", "POST", "/v1/checks", testToken, "application/json", `{"id": `, http.StatusBadRequest, []string{""}},
		{"invalid document", "PUT", "/v1/document", testToken, "application/yaml", "checks: []\n", http.StatusUnprocessableEntity, []string{"regions"}},
		{"id mismatch", "PUT", "/v1/checks/web-1", testToken, "application/json", checkJSON("web-2", 1), http.StatusBadRequest, []string{"id"}},
		{"create existing", "POST", "/v1/checks", testToken, "application/json", checkJSON("web-1", 1), http.StatusConflict, nil},
		{"delete missing", "DELETE", "/v1/checks/nope", testToken, "", "", http.StatusNotFound, nil},
		{"record set in missing zone", "POST", "/v1/zones/nope.test/record_sets", testToken, "application/json",
			`{"name": "a", "type": "A", "records": [{"value": "192.0.2.9"}]}`, http.StatusNotFound, nil},
		{"bad index", "GET", "/v1/state?index=x", "", "", "", http.StatusBadRequest, []string{"index"}},
		{"bad wait", "GET", "/v1/state?index=1&wait=soon", "", "", "", http.StatusBadRequest, []string{"wait"}},
		{"no such path", "GET", "/v2/whatever", "", "", "", http.StatusNotFound, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out := do(t, tc.method, base+tc.path, tc.token, tc.ctype, tc.body)
			if code != tc.code {
				t.Fatalf("%d %s, want %d", code, out, tc.code)
			}
			e := decodeError(t, out)
			if tc.paths != nil {
				// Every expected problem is listed (validation may find more).
				var got []string
				for _, fe := range e.Errors {
					got = append(got, fe.Path)
				}
				for _, p := range tc.paths {
					if !slices.Contains(got, p) {
						t.Fatalf("error paths %q lack %q (%s)", got, p, out)
					}
				}
			}
			if s := v.node.State(); s.Index != idx {
				t.Fatalf("index moved from %d to %d: something was applied", idx, s.Index)
			}
		})
	}
}

// TestCRUD: create, read, replace and delete checks, zones and record sets, with
// validation of what the rest of the document refers to.
func TestCRUD(t *testing.T) {
	c := newCluster(t, 1)
	base := c.voters[0].url()
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", testDoc)

	mustWrite(t, "POST", base+"/v1/checks", "application/json", checkJSON("web-3", 8083))
	mustWrite(t, "PUT", base+"/v1/checks/web-3", "application/yaml", "protocol: tcp\ntarget: {host: 127.0.0.1, port: 22}\n")
	code, out := do(t, "GET", base+"/v1/checks/web-3", "", "", "")
	var got struct {
		state.ReadMeta
		Data struct {
			Protocol string `json:"protocol"`
			Interval string `json:"interval"`
		} `json:"data"`
	}
	if err := json.Unmarshal(out, &got); code != 200 || err != nil || got.Data.Protocol != "tcp" || got.Data.Interval != "10s" {
		t.Fatalf("replaced check: %d %s", code, out)
	}

	mustWrite(t, "POST", base+"/v1/zones", "application/json", `{"name": "other.test", "ttl": 30}`)
	mustWrite(t, "PUT", base+"/v1/zones/other.test/record_sets/api/A", "application/json",
		`{"policy": "multivalue", "records": [{"value": "192.0.2.7", "health_check": "web-3"}]}`)
	code, out = do(t, "GET", base+"/v1/zones/OTHER.test./record_sets/api.other.test./a", "", "", "")
	if code != 200 || !strings.Contains(string(out), "192.0.2.7") {
		t.Fatalf("record set: %d %s", code, out)
	}
	code, out = do(t, "GET", base+"/v1/zones/other.test", "", "", "")
	if code != 200 || !strings.Contains(string(out), `"shard"`) {
		t.Fatalf("zone view without its shard: %d %s", code, out)
	}
	soa := c.voters[0].node.State()
	if z, _ := soa.Zone("other.test"); z.SOA.Serial != uint32(soa.Index) {
		t.Fatalf("zone serial %d, want the index %d of its last change", z.SOA.Serial, soa.Index)
	}
	mustWrite(t, "DELETE", base+"/v1/zones/other.test/record_sets/api/A", "", "")
	mustWrite(t, "DELETE", base+"/v1/zones/other.test", "", "")
	mustWrite(t, "DELETE", base+"/v1/checks/web-3", "", "")
	code, _ = do(t, "GET", base+"/v1/checks/web-3", "", "", "")
	if code != http.StatusNotFound {
		t.Fatalf("deleted check answers %d", code)
	}
	if s := c.voters[0].node.State(); len(s.Shards()) != 1 {
		t.Fatalf("shards after deleting a zone: %v", s.Shards())
	}
}

// TestBlockingRead: a blocking read returns as soon as the index passes, and after its wait
// when nothing changes.
func TestBlockingRead(t *testing.T) {
	c := newCluster(t, 1)
	base := c.voters[0].url()
	idx := mustWrite(t, "PUT", base+"/v1/document", "application/yaml", testDoc)
	done := make(chan uint64, 1)
	go func() {
		_, s := readStateAPI(t, base, "?index="+itoa(idx)+"&wait=20s")
		done <- s.Index
	}()
	time.Sleep(100 * time.Millisecond)
	next := mustWrite(t, "POST", base+"/v1/checks", "application/json", checkJSON("web-9", 8089))
	select {
	case got := <-done:
		if got != next {
			t.Fatalf("blocking read returned index %d, want %d", got, next)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking read did not return after a write")
	}
	start := time.Now()
	meta, _ := readStateAPI(t, base, "?index="+itoa(next)+"&wait=200ms")
	if meta.Index != next || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("idle blocking read: index %d after %v", meta.Index, time.Since(start))
	}
	meta, _ = readStateAPI(t, base, "?consistent")
	if !meta.Consistent || meta.Stale || meta.Index != next {
		t.Fatalf("linearizable read: %+v", meta)
	}
}

// TestReadTokens: with reads closed, a read needs a read or write token, and a read token
// cannot write.
func TestReadTokens(t *testing.T) {
	c := newCluster(t, 1)
	v := c.voters[0]
	api, err := NewAPI(APIConfig{Node: v.node, WriteTokens: []string{testToken}, ReadTokens: []string{"reader"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, token string
		want          int
	}{
		{"GET", "", 401}, {"GET", "reader", 200}, {"GET", testToken, 200}, {"GET", "x", 401},
		{"POST", "reader", 401},
	} {
		req, _ := http.NewRequest(tc.method, "/v1/checks", strings.NewReader(checkJSON("r", 1)))
		req.Header.Set("Content-Type", "application/json")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s with %q: %d, want %d", tc.method, tc.token, rec.Code, tc.want)
		}
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
