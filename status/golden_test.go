package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location/history"
)

// update rewrites the golden files of TestGoldenJSON: go test ./status/ -run Golden -update.
var update = flag.Bool("update", false, "rewrite status/testdata/golden/*.json from the API's answers")

// overridingLocation is a testLocation that also holds maintenance overrides.
type overridingLocation struct {
	*testLocation
	overrides []*state.Override
}

// Overrides implements overrideLister.
func (l overridingLocation) Overrides() []*state.Override { return l.overrides }

// fixedChecker is a CheckerView of fixed probes: one with a report and a result in which
// every field is set, one assigned but not probed yet.
type fixedChecker struct{}

func (fixedChecker) Probes() []Probe {
	up := config.Check{ID: "web-us-east", Protocol: config.ProtocolHTTPS, Interval: config.Duration(10 * time.Second),
		Target: config.Target{Host: "192.0.2.10", Port: 443}}
	fresh := config.Check{ID: "web-new", Protocol: config.ProtocolTCP, Target: config.Target{Host: "192.0.2.11", Port: 25}}
	timings := checker.Timings{DNS: time.Millisecond, Connect: 2 * time.Millisecond, TLS: 3 * time.Millisecond,
		FirstByte: 4 * time.Millisecond, Total: 10500 * time.Microsecond}
	return []Probe{
		{Check: fresh},
		{Check: up,
			Report: &checker.Report{CheckID: up.ID, Status: checker.StatusHealthy, Consecutive: 3, Reason: checker.ReasonOK,
				Latency: timings.Total, Timings: timings, At: t0.Add(-time.Second), Seq: 12},
			Last: &checker.Result{Healthy: true, Reason: checker.ReasonOK, Message: "HTTP 200", Start: t0.Add(-time.Second),
				Timings: timings, Address: netip.MustParseAddrPort("192.0.2.10:443"), StatusCode: 200, Protocol: "h2",
				Redirects: 1, CertNotAfter: t0.Add(90 * 24 * time.Hour), Lag: 1500 * time.Microsecond}},
	}
}

func (fixedChecker) Self() checker.SelfHealth {
	return checker.SelfHealth{Healthy: false, Reason: "isolated: 0 of 3 references reachable"}
}

// peerTransport answers the network view's requests from in-process APIs, by host; a host it
// does not know is unreachable.
type peerTransport map[string]http.Handler

func (p peerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h, ok := p[r.URL.Host]
	if !ok {
		return nil, errors.New("no route to host")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// goldenAPI is the status API of loc-us over fixed inputs: the demo scenario with two
// overrides, a fixed checker, a history, and a network of two peers, one unreachable.
func goldenAPI(t *testing.T) *API {
	t.Helper()
	loc := newTestLocation(t)
	demoScenario(loc)
	ovs := []*state.Override{
		{ID: "a1b2c3d4e5f6", Kind: state.OverrideHealthy, Check: "web-sa-east", Reason: "migration", Author: "ops",
			Created: t0.Add(-time.Hour), Expires: t0.Add(time.Hour)},
		{ID: "0f1e2d3c4b5a", Kind: state.OverrideDrain, Zone: "demo.vigil.test.", Name: "all.demo.vigil.test.",
			Type: config.TypeA, Value: "198.51.100.2", Reason: "maintenance", Author: "ops",
			Created: t0.Add(-time.Hour), Expires: t0.Add(2 * time.Hour)},
	}
	hs, err := history.Open(history.Options{}, t0.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Record([]history.Change{
		{Check: "web-eu-west", At: t0.Add(-2 * time.Hour), From: "", To: "healthy", Healthy: 6, Fresh: 6},
		{Check: "web-eu-west", At: t0.Add(-30 * time.Minute), From: "healthy", To: "unhealthy", Unhealthy: 6, Fresh: 6},
		{Check: "web-us-east", At: t0.Add(-time.Hour), From: "", To: "healthy", Healthy: 4, Fresh: 4, Stale: 2},
	}, []history.AnswerChange{
		{Name: "www.demo.vigil.test.", Type: "A", At: t0.Add(-30 * time.Minute), From: []string{"192.0.2.1"}, To: []string{"192.0.2.2"}},
	}); err != nil {
		t.Fatal(err)
	}
	peer := newTestLocation(t)
	demoScenario(peer)
	peer.reports["web-eu-west"] = nil
	peer.evaluate()
	node := newTestNode()
	peerAPI, err := New(Options{Node: &fakeNode{id: "loc-eu", region: "eu-west"}, Location: peer,
		Now: func() time.Time { return t0.Add(-time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	members := append(node.Members(),
		Member{ID: "loc-eu", Region: "eu-west", Roles: []string{"location"}, Addr: "127.0.0.2:7946", State: "alive"},
		Member{ID: "loc-ap", Region: "ap-south", Roles: []string{"location", "checker"}, Addr: "127.0.0.3:7946", HTTP: ":7701", State: "alive"})
	node.members = members
	node.ready = Readiness{Reasons: []string{"location warming up: not yet a freshness window of reports"},
		Degraded: []string{"zone broken.test.: not installed: no SOA"}}
	a, err := New(Options{Node: node, Location: overridingLocation{loc, ovs}, Checker: fixedChecker{}, History: storeHistory{hs},
		Now: func() time.Time { return t0 },
		Network: NetworkOptions{
			PeerURL: func(m Member) string { return "http://" + m.ID + ".test" },
			Client:  &http.Client{Transport: peerTransport{"loc-eu.test": peerAPI}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// goldenCases are the requests whose answers TestGoldenJSON records, by file name, with the
// type each decodes into (nil: an error body).
var goldenCases = []struct {
	name, path string
	code       int
	into       func() any
}{
	{"verdicts", "/v1/verdicts", 200, func() any { return new(VerdictList) }},
	{"verdicts-unhealthy", "/v1/verdicts?state=unhealthy", 200, func() any { return new(VerdictList) }},
	{"verdict-us-east", "/v1/verdicts/web-us-east", 200, func() any { return new(CheckEvidence) }},
	{"verdict-eu-west", "/v1/verdicts/web-eu-west", 200, func() any { return new(CheckEvidence) }},
	{"verdict-sa-east", "/v1/verdicts/web-sa-east", 200, func() any { return new(CheckEvidence) }},
	{"verdict-majority", "/v1/verdicts/web-majority", 200, func() any { return new(CheckEvidence) }},
	{"verdict-missing", "/v1/verdicts/nope", 404, func() any { return new(ErrorBody) }},
	{"checkers", "/v1/checkers", 200, func() any { return new(CheckerList) }},
	{"answer-www", "/v1/answer?name=www.demo.vigil.test&type=A", 200, func() any { return new(Answer) }},
	{"answer-api", "/v1/answer?name=api.demo.vigil.test&type=A", 200, func() any { return new(Answer) }},
	{"answer-all", "/v1/answer?name=all.demo.vigil.test&type=A", 200, func() any { return new(Answer) }},
	{"answer-txt", "/v1/answer?name=demo.vigil.test&type=TXT", 200, func() any { return new(Answer) }},
	{"answer-bad", "/v1/answer?name=www.demo.vigil.test", 400, func() any { return new(ErrorBody) }},
	{"served-zones", "/v1/served-zones", 200, func() any { return new(ZoneList) }},
	{"answers", "/v1/answers", 200, func() any { return new(AnswerList) }},
	{"network", "/v1/network", 200, func() any { return new(NetworkView) }},
	{"network-page", "/v1/network?limit=2&cursor=web-majority", 200, func() any { return new(NetworkView) }},
	{"digest", "/v1/network/digest", 200, func() any { return new(Digest) }},
	{"history", "/v1/history", 200, func() any { return new(HistoryList) }},
	{"history-eu-west", "/v1/history/web-eu-west", 200, func() any { return new(CheckHistory) }},
	{"answer-history", "/v1/answer-history", 200, func() any { return new(AnswerHistory) }},
	{"probes", "/v1/probes", 200, func() any { return new(ProbeList) }},
	{"self", "/v1/self", 200, func() any { return new(checker.SelfHealth) }},
	{"node", "/v1/node", 200, func() any { return new(NodeInfo) }},
	{"members", "/v1/members", 200, func() any { return new(MemberList) }},
	{"readyz", "/readyz", 503, func() any { return new(Readiness) }},
	{"method", "/v1/node?x=1", 400, func() any { return new(ErrorBody) }},
}

// TestGoldenJSON records the JSON of every endpoint of the status API for a fixed input, byte
// for byte, in testdata/golden: any change of the API's JSON (a field renamed, reordered,
// added, dropped or written otherwise) fails it. Each answer also decodes strictly into the
// type the client reads it with and encodes again to the same bytes, so the server's and the
// client's types agree. -update rewrites the files after an intended change.
func TestGoldenJSON(t *testing.T) {
	a := goldenAPI(t)
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, a, tc.path)
			if code != tc.code {
				t.Fatalf("GET %s: %d, want %d: %s", tc.path, code, tc.code, body)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, body, "", "  "); err != nil {
				t.Fatalf("GET %s: not JSON: %v\n%s", tc.path, err, body)
			}
			file := filepath.Join("testdata", "golden", tc.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, indented.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to record it)", err)
			}
			if !bytes.Equal(indented.Bytes(), want) {
				t.Errorf("GET %s: the JSON differs from %s:\n got %s\nwant %s", tc.path, file, indented.Bytes(), want)
			}
			v := tc.into()
			decodeStrict(t, body, v)
			again, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(append(again, '\n'), body) {
				t.Errorf("GET %s: %T does not round-trip:\n got %s\nwant %s", tc.path, v,
					again, strings.TrimSuffix(string(body), "\n"))
			}
			if reflect.ValueOf(v).Elem().IsZero() {
				t.Errorf("GET %s: decoded to a zero %T", tc.path, v)
			}
		})
	}
}
