package status

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
)

// newTestAPI serves loc (nil: not a location), the test node and cv (nil: not a checker).
func newTestAPI(t *testing.T, loc *testLocation, cv CheckerView) (*API, *testNode, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	node := newTestNode()
	opts := Options{Node: node, Gatherer: reg, Registerer: reg, Now: func() time.Time { return t0 }}
	if loc != nil {
		opts.Location = loc
	}
	if cv != nil {
		opts.Checker = cv
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, node, reg
}

// get serves one GET and returns its status code and body.
func get(t *testing.T, h http.Handler, path string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, body
}

// decodeStrict decodes body into out, refusing fields out does not have: the server's JSON
// and the client's types must agree.
func decodeStrict(t *testing.T, body []byte, out any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decoding %T: %v\n%s", out, err, body)
	}
}

// served returns the routing health of the location's verdicts, as DNS serves them.
func served(loc *testLocation) routing.Health {
	return func(id string) bool {
		v, ok := loc.verdicts[id]
		return !ok || v.Serving()
	}
}

// recordSet finds a record set of the demo zone.
func recordSet(t *testing.T, loc *testLocation, name string, typ config.RecordType) *config.RecordSet {
	t.Helper()
	for i := range loc.doc.Zones[0].RecordSets {
		rs := &loc.doc.Zones[0].RecordSets[i]
		if (rs.Name == name || strings.HasPrefix(rs.Name, name+".")) && rs.Type == typ {
			return rs
		}
	}
	t.Fatalf("no record set %s %s", name, typ)
	return nil
}

func TestLocationRoutes(t *testing.T) {
	loc := newTestLocation(t)
	demoScenario(loc)
	a, _, _ := newTestAPI(t, loc, nil)

	// The verdicts quorum computed, which every view must show.
	want := map[string]quorum.State{"web-us-east": quorum.StateHealthy, "web-eu-west": quorum.StateUnhealthy,
		"web-sa-east": quorum.StateUnknown, "web-majority": quorum.StateHealthy}
	for id, st := range want {
		if loc.verdicts[id].State != st {
			t.Fatalf("scenario: quorum says %s is %s, the test expects %s", id, loc.verdicts[id].State, st)
		}
	}

	var cases []routeCase
	cases = append(cases, verdictRouteCases(loc)...)
	cases = append(cases, evidenceRouteCases()...)
	cases = append(cases, answerRouteCases(loc)...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, a, tc.path)
			if code != tc.code {
				t.Fatalf("GET %s: %d, want %d: %s", tc.path, code, tc.code, body)
			}
			tc.check(t, body)
		})
	}
}

// routeCase is a GET of the API and what its answer must be.
type routeCase struct {
	name  string
	path  string
	code  int
	check func(t *testing.T, body []byte)
}

// verdictRouteCases are the cases of the verdict list.
func verdictRouteCases(loc *testLocation) []routeCase {
	return []routeCase{
		{"all verdicts", "/v1/verdicts", 200, checkAllVerdicts(loc)},
		{"unhealthy only", "/v1/verdicts?state=unhealthy", 200, func(t *testing.T, body []byte) {
			var l VerdictList
			decodeStrict(t, body, &l)
			if len(l.Checks) != 1 || l.Checks[0].ID != "web-eu-west" {
				t.Errorf("checks %+v", l.Checks)
			}
		}},
		{"bad state", "/v1/verdicts?state=sick", 400, wantError("invalid state")},
		{"unknown parameter", "/v1/verdicts?colour=red", 400, wantError(`unknown query parameter "colour"`)},
		{"repeated parameter", "/v1/verdicts?state=healthy&state=unknown", 400, wantError("given 2 times")},
	}
}

// checkAllVerdicts checks the whole verdict list against what quorum computed for loc.
func checkAllVerdicts(loc *testLocation) func(t *testing.T, body []byte) {
	return func(t *testing.T, body []byte) {
		var l VerdictList
		decodeStrict(t, body, &l)
		if l.Location != "loc-us" || !l.GeneratedAt.Equal(t0) {
			t.Errorf("location %q at %v", l.Location, l.GeneratedAt)
		}
		if !reflect.DeepEqual(l.Regions, []string{"eu-west", "sa-east", "us-east"}) {
			t.Errorf("regions %v", l.Regions)
		}
		var ids []string
		for _, c := range l.Checks {
			ids = append(ids, c.ID)
			v := loc.verdicts[c.ID]
			if c.State != v.State || c.Explanation != v.Sentence() || c.Counts != v.Counts || !c.Since.Equal(v.Since) {
				t.Errorf("%s: got %s %q %+v, quorum says %s %q %+v", c.ID, c.State, c.Explanation, c.Counts, v.State, v.Sentence(), v.Counts)
			}
			if c.ServedAsHealthy != v.Serving() {
				t.Errorf("%s: served %v", c.ID, c.ServedAsHealthy)
			}
		}
		if !reflect.DeepEqual(ids, []string{"web-eu-west", "web-majority", "web-sa-east", "web-us-east"}) {
			t.Errorf("checks %v", ids)
		}
		cells := map[string]map[string]RegionCell{}
		for _, c := range l.Checks {
			cells[c.ID] = c.Regions
		}
		wantCells := map[string]map[string]RegionCell{
			"web-us-east": {
				"us-east": {State: CellHealthy, Healthy: 2},
				"eu-west": {State: CellHealthy, Healthy: 2},
				"sa-east": {State: CellUnknown, NeverHeard: 2},
			},
			"web-eu-west": {
				"us-east": {State: CellUnhealthy, Unhealthy: 2},
				"eu-west": {State: CellUnhealthy, Unhealthy: 2},
				"sa-east": {State: CellUnhealthy, Unhealthy: 2},
			},
			"web-sa-east": {"sa-east": {State: CellStale, Stale: 2}},
		}
		for id, w := range wantCells {
			if !reflect.DeepEqual(cells[id], w) {
				t.Errorf("%s cells: got %+v, want %+v", id, cells[id], w)
			}
		}
		if cells["web-majority"] != nil {
			t.Errorf("calculated check has region cells %+v", cells["web-majority"])
		}
	}
}

// evidenceRouteCases are the cases of one check's evidence.
func evidenceRouteCases() []routeCase {
	return []routeCase{
		{"unhealthy evidence", "/v1/verdicts/web-eu-west", 200, func(t *testing.T, body []byte) {
			var e CheckEvidence
			decodeStrict(t, body, &e)
			if e.ID != "web-eu-west" || e.State != quorum.StateUnhealthy || e.ServedAsHealthy || e.Rule != quorum.RuleThreshold {
				t.Errorf("verdict %+v", e.VerdictSummary)
			}
			if e.FreshnessWindow.Std() != 5*time.Second || e.Hold.Std() != 10*time.Second {
				t.Errorf("window %s hold %s", e.FreshnessWindow.Std(), e.Hold.Std())
			}
			if len(e.Votes) != 6 {
				t.Fatalf("votes %+v", e.Votes)
			}
			for _, v := range e.Votes {
				if v.Status != quorum.VoteUnhealthy || !v.Counted || v.Reason != "status: HTTP 503" || v.Latency.Std() != 12*time.Millisecond {
					t.Errorf("vote %+v", v)
				}
				if wantExp := slices.Contains([]string{"us-1", "eu-1", "sa-1"}, v.Checker); v.Expected != wantExp {
					t.Errorf("vote %s expected %v", v.Checker, v.Expected)
				}
			}
			if len(e.NeverHeard) != 1 || e.NeverHeard[0].Checker != "ap-9" || e.NeverHeard[0].Region != "" {
				t.Errorf("never heard %+v", e.NeverHeard)
			}
		}},
		{"withdrawn evidence", "/v1/verdicts/web-us-east", 200, func(t *testing.T, body []byte) {
			var e CheckEvidence
			decodeStrict(t, body, &e)
			if e.State != quorum.StateHealthy || e.Counts.NeverHeard != 2 || e.Counts.Fresh != 4 || e.Counts.Stale != 0 {
				t.Errorf("verdict %+v", e.VerdictSummary)
			}
			for _, v := range e.Votes {
				if strings.HasPrefix(v.Checker, "sa-") {
					t.Errorf("a withdrawn report still votes: %+v", v)
				}
			}
			if len(e.NeverHeard) != 2 || e.NeverHeard[0].Checker != "sa-1" || e.NeverHeard[0].Region != "sa-east" {
				t.Errorf("never heard %+v", e.NeverHeard)
			}
		}},
		{"stale evidence", "/v1/verdicts/web-sa-east", 200, func(t *testing.T, body []byte) {
			var e CheckEvidence
			decodeStrict(t, body, &e)
			if e.State != quorum.StateUnknown || e.Rule != quorum.RuleShort || !e.ServedAsHealthy {
				t.Errorf("verdict %+v", e.VerdictSummary)
			}
			if len(e.Votes) != 2 || !e.Votes[0].StaleSince.Equal(t0.Add(-time.Minute+5*time.Second)) {
				t.Errorf("votes %+v", e.Votes)
			}
		}},
		{"calculated evidence", "/v1/verdicts/web-majority", 200, func(t *testing.T, body []byte) {
			var e CheckEvidence
			decodeStrict(t, body, &e)
			want := []quorum.ChildVote{{Check: "web-us-east", State: quorum.StateHealthy, CountedHealthy: true},
				{Check: "web-eu-west", State: quorum.StateUnhealthy}, {Check: "web-sa-east", State: quorum.StateUnknown, CountedHealthy: true}}
			if !e.Calculated || e.MinHealthy != 2 || !reflect.DeepEqual(e.Children, want) {
				t.Errorf("calculated %+v", e)
			}
		}},
		{"unknown check", "/v1/verdicts/no-such-check", 404, wantError(`no check "no-such-check"`)},
	}
}

// answerRouteCases are the cases of the checkers heard, the answers and the errors of paths.
func answerRouteCases(loc *testLocation) []routeCase {
	return []routeCase{
		{"checkers", "/v1/checkers", 200, func(t *testing.T, body []byte) {
			var l CheckerList
			decodeStrict(t, body, &l)
			var got []string
			for _, h := range l.Checkers {
				state := "fresh"
				if !h.Fresh {
					state = "stale since " + h.StaleSince.Format(time.TimeOnly)
				}
				got = append(got, h.Region+"/"+h.ID+" "+state)
			}
			want := []string{"eu-west/eu-1 fresh", "eu-west/eu-2 fresh", "sa-east/sa-1 fresh", "sa-east/sa-2 fresh",
				"sa-east/sa-3 stale since 11:59:05", "sa-east/sa-4 stale since 11:58:05", "us-east/us-1 fresh", "us-east/us-2 fresh"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("checkers\n got %q\nwant %q", got, want)
			}
		}},
		{"failover answer", "/v1/answer?name=www.demo.vigil.test&type=A", 200, func(t *testing.T, body []byte) {
			var an Answer
			decodeStrict(t, body, &an)
			res, err := routing.Explain(recordSet(t, loc, "www", config.TypeA), served(loc), 1)
			if err != nil {
				t.Fatal(err)
			}
			if an.Name != "www.demo.vigil.test." || an.Policy != "failover" || an.Rule != res.Rule.String() ||
				!reflect.DeepEqual(an.Values, res.Values()) || an.LastResort {
				t.Errorf("answer %+v, routing says %s", an, res)
			}
			if an.Rule != "primary" || len(an.Candidates) != 2 || an.Candidates[0].Role != "primary" || !an.Candidates[0].Chosen {
				t.Errorf("answer %+v", an)
			}
		}},
		{"multivalue answer, lower-case type", "/v1/answer?name=ALL.demo.vigil.test.&type=a", 200, func(t *testing.T, body []byte) {
			var an Answer
			decodeStrict(t, body, &an)
			res, err := routing.Explain(recordSet(t, loc, "all", config.TypeA), served(loc), 1)
			if err != nil {
				t.Fatal(err)
			}
			if an.Type != "A" || !reflect.DeepEqual(an.Values, res.Values()) || slices.Contains(an.Values, "198.51.100.1") {
				t.Errorf("answer %+v, routing says %s", an, res)
			}
			for _, c := range an.Candidates {
				if c.HealthCheck == "web-eu-west" && (c.Health != routing.HealthUnhealthy || c.Chosen) {
					t.Errorf("candidate %+v", c)
				}
			}
		}},
		{"answer without type", "/v1/answer?name=www.demo.vigil.test", 400, wantError("needs the query parameters name and type")},
		{"answer of unknown type", "/v1/answer?name=www.demo.vigil.test&type=BOGUS", 400, wantError(`unknown DNS type "BOGUS"`)},
		{"answer of a bad name", "/v1/answer?name=a..b&type=A", 400, wantError("not a domain name")},
		{"answer outside the zones", "/v1/answer?name=www.example.org&type=A", 404, wantError("in no hosted zone")},
		{"answer of a missing name", "/v1/answer?name=nope.demo.vigil.test&type=A", 404, wantError("does not exist")},
		{"not a checker", "/v1/probes", 404, wantError("not a checker")},
		{"unknown path", "/v2/everything", 404, wantError("no such resource")},
	}
}

// wantError checks a JSON error body that contains msg.
func wantError(msg string) func(t *testing.T, body []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		var e ErrorBody
		decodeStrict(t, body, &e)
		if !strings.Contains(e.Error, msg) || !strings.HasPrefix(e.Error, "status: ") {
			t.Errorf("error %q, want one containing %q", e.Error, msg)
		}
	}
}

// TestLastResortAnswer: every endpoint unhealthy, so every policy answers in last resort, and
// the API says so.
func TestLastResortAnswer(t *testing.T) {
	loc := newTestLocation(t)
	for _, id := range []string{"web-us-east", "web-eu-west", "web-sa-east"} {
		for _, c := range []string{"us-1", "eu-1", "sa-1"} {
			loc.reports[id] = append(loc.reports[id], loc.report(c, false, "timeout", time.Second))
		}
	}
	loc.evaluate()
	a, _, _ := newTestAPI(t, loc, nil)
	for _, name := range []string{"www", "api", "all"} {
		code, body := get(t, a, "/v1/answer?name="+name+".demo.vigil.test&type=A")
		if code != 200 {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		var an Answer
		decodeStrict(t, body, &an)
		res, err := routing.Explain(recordSet(t, loc, name, config.TypeA), served(loc), 1)
		if err != nil {
			t.Fatal(err)
		}
		if !an.LastResort || an.Rule != "last-resort" || !res.LastResort || !reflect.DeepEqual(an.Values, res.Values()) {
			t.Errorf("%s: %+v; routing says %s", name, an, res)
		}
	}
	code, body := get(t, a, "/v1/verdicts?state=unhealthy")
	var l VerdictList
	decodeStrict(t, body, &l)
	if code != 200 || len(l.Checks) != 4 {
		t.Errorf("unhealthy: %d %+v", code, l.Checks)
	}
}

func TestNodeRoutes(t *testing.T) {
	a, node, _ := newTestAPI(t, nil, nil)
	code, body := get(t, a, "/v1/node")
	var n NodeInfo
	decodeStrict(t, body, &n)
	if code != 200 || n.ID != "loc-us" || n.Version != "test-1.2.3" || n.Config.Index != 42 || n.Config.Source != "disk" || !n.Readiness.Ready {
		t.Errorf("node: %d %+v", code, n)
	}
	code, body = get(t, a, "/v1/members")
	var m MemberList
	decodeStrict(t, body, &m)
	var ids []string
	for _, mb := range m.Members {
		ids = append(ids, mb.ID)
	}
	if code != 200 || !reflect.DeepEqual(ids, []string{"eu-1", "eu-2", "sa-1", "sa-2", "loc-us", "us-1", "us-2"}) {
		t.Errorf("members: %d %v", code, ids)
	}
	if code, body := get(t, a, "/healthz"); code != 200 || string(body) != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	code, body = get(t, a, "/readyz")
	var rd Readiness
	decodeStrict(t, body, &rd)
	if code != 200 || !rd.Ready {
		t.Errorf("readyz: %d %s", code, body)
	}
	node.mu.Lock()
	node.ready = Readiness{Reasons: []string{"location warming up: not yet a freshness window of reports"}}
	node.mu.Unlock()
	code, body = get(t, a, "/readyz")
	rd = Readiness{}
	decodeStrict(t, body, &rd)
	if code != 503 || rd.Ready || len(rd.Reasons) != 1 {
		t.Errorf("readyz while warming: %d %+v", code, rd)
	}
	if code, _ := get(t, a, "/healthz"); code != 200 {
		t.Errorf("healthz while warming: %d (a starting node is alive, not unhealthy)", code)
	}
	for _, p := range []string{"/v1/verdicts", "/v1/verdicts/x", "/v1/checkers", "/v1/answer?name=a&type=A"} {
		code, body := get(t, a, p)
		if code != 404 || !strings.Contains(string(body), "not a DNS location") {
			t.Errorf("%s on a node without a location: %d %s", p, code, body)
		}
	}
	if code, body := get(t, a, "/v1/node?x=1"); code != 400 {
		t.Errorf("node with a query: %d %s", code, body)
	}
}

func TestReadOnly(t *testing.T) {
	a, _, _ := newTestAPI(t, nil, nil)
	for _, p := range []string{"/v1/node", "/v1/verdicts/x", "/nowhere"} {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, p, strings.NewReader("{}")))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: %d %v", p, rec.Code, rec.Header())
		}
		wantError("read-only")(t, rec.Body.Bytes())
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/v1/node", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("HEAD /v1/node: %d", rec.Code)
	}
}

func TestNewNeedsNode(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.HasPrefix(err.Error(), "status: ") {
		t.Errorf("New without a node: %v", err)
	}
}
