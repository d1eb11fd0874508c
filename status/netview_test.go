package status

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/history"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
)

// fakeLocation is a LocationView of fixed verdicts and heard checkers.
type fakeLocation struct {
	verdicts []CheckVerdict
	heard    []quorum.HeardChecker
}

func (f *fakeLocation) Verdicts() []CheckVerdict { return f.verdicts }
func (f *fakeLocation) Explain(id string) (quorum.Explanation, bool) {
	for _, v := range f.verdicts {
		if v.ID == id {
			return v.Verdict, true
		}
	}
	return quorum.Explanation{}, false
}
func (f *fakeLocation) Checkers() []quorum.HeardChecker { return f.heard }
func (f *fakeLocation) Answer(string, string) (routing.Result, error) {
	return routing.Result{}, fmt.Errorf("none")
}
func (f *fakeLocation) Zones() []location.ZoneState { return nil }

// fakeNode is a NodeView of one identity and fixed members.
type fakeNode struct {
	id, region string
	members    []Member
}

func (f *fakeNode) Identity() Identity {
	return Identity{ID: f.id, Region: f.region, Roles: []string{"location"}}
}
func (f *fakeNode) Members() []Member           { return f.members }
func (f *fakeNode) Config() state.WatcherStatus { return state.WatcherStatus{} }
func (f *fakeNode) Readiness() Readiness        { return Readiness{Ready: true} }

// fakeNetwork makes three locations' views of n checks: loc-us and loc-eu hear every region's
// checkers and call every check healthy; loc-sa hears only sa-east's and calls check-0001
// unhealthy.
func fakeNetwork(n int) map[string]*fakeLocation {
	out := map[string]*fakeLocation{}
	for _, loc := range []string{"loc-us", "loc-eu", "loc-sa"} {
		f := &fakeLocation{}
		for _, r := range []string{"eu-west", "sa-east", "us-east"} {
			fresh := loc != "loc-sa" || r == "sa-east"
			f.heard = append(f.heard, quorum.HeardChecker{ID: r + "-1", Region: r, Fresh: fresh, Reports: n})
		}
		for i := range n {
			e := quorum.Explanation{}
			e.State = quorum.StateHealthy
			e.Counts = quorum.Counts{Healthy: 3, Fresh: 3}
			if loc == "loc-sa" {
				e.Counts = quorum.Counts{Healthy: 1, Fresh: 1, Stale: 2}
				if i == 1 {
					e.State, e.Counts = quorum.StateUnhealthy, quorum.Counts{Unhealthy: 1, Fresh: 1, Stale: 2}
				}
			}
			f.verdicts = append(f.verdicts, CheckVerdict{ID: fmt.Sprintf("check-%04d", i), Verdict: e})
		}
		out[loc] = f
	}
	return out
}

// TestNetworkView: the asked location lays its own and its peers' verdicts side by side,
// marks the check on which loc-sa disagrees with why, shows a peer it cannot reach as such,
// pages and filters, and fetches each peer at most once per CacheFor however often it is
// asked.
func TestNetworkView(t *testing.T) {
	api, fetches := newNetworkViewAPI(t)
	get := func(query string) NetworkView {
		t.Helper()
		return getNetwork(t, api, query)
	}
	v := get("")
	if len(v.Locations) != 4 || !v.Locations[0].Self || v.Locations[0].ID != "loc-us" {
		t.Fatalf("locations: %+v", v.Locations)
	}
	for _, l := range v.Locations {
		if l.ID == "loc-ap" && (l.Reachable || !strings.Contains(l.Error, "unreachable")) {
			t.Errorf("loc-ap is not shown unreachable: %+v", l)
		}
		if l.ID != "loc-ap" && !l.Reachable {
			t.Errorf("%s unreachable: %s", l.ID, l.Error)
		}
	}
	if v.Checks != 250 || v.Disagreements != 1 || len(v.Rows) != defaultLimit || v.Next != "check-0099" {
		t.Errorf("checks %d, disagreements %d, rows %d, next %q", v.Checks, v.Disagreements, len(v.Rows), v.Next)
	}
	row := v.Rows[1]
	if !row.Disagree || len(row.Cells) != 3 || row.Cells["loc-sa"].State != "unhealthy" {
		t.Errorf("row check-0001: %+v", row)
	}
	for _, want := range []string{"loc-sa (0/1 fresh healthy) says unhealthy", "loc-sa hears only sa-east checkers (1 of 3 fresh), none of eu-west, us-east"} {
		if !strings.Contains(row.Reason, want) {
			t.Errorf("reason %q does not say %q", row.Reason, want)
		}
	}
	// loc-ap is unreachable: where the others agree, whether every location agrees is
	// unknown, and the view counts those checks apart, never as agreeing.
	if r := v.Rows[0]; r.Disagree || r.Agreement != AgreementUnknown || r.Reason != "loc-ap unreachable: whether it agrees is unknown" {
		t.Errorf("check-0000 with loc-ap unreachable: agreement %q, reason %q, want unknown", r.Agreement, r.Reason)
	}
	if v.Unknown != 249 || v.Rows[1].Agreement != AgreementDisagree {
		t.Errorf("unknown %d, want 249 (every check but the one in dispute); check-0001 %q", v.Unknown, v.Rows[1].Agreement)
	}
	checkNetworkPages(t, get)
	if d := get("?filter=disagree"); d.Matching != 1 || len(d.Rows) != 1 || d.Rows[0].ID != "check-0001" {
		t.Errorf("filter disagree: %+v", d.Rows)
	}
	if u := get("?filter=unhealthy&q=0001"); u.Matching != 1 {
		t.Errorf("filter unhealthy and search: %d rows", u.Matching)
	}
	if s := get("?q=CHECK-02"); s.Matching != 50 {
		t.Errorf("search check-02: %d rows, want 50", s.Matching)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("peers were fetched %d times for 10 requests within CacheFor, want 2 (once each)", n)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?filter=bad", "?other=1"} {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/v1/network"+q, nil))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("GET /v1/network%s: %d, want 400", q, rec.Code)
		}
	}
}

// newNetworkViewAPI serves loc-us of a network of 250 checks whose peers loc-eu and loc-sa
// answer (counted in fetches) and loc-ap is gone.
func newNetworkViewAPI(t *testing.T) (*API, *atomic.Int64) {
	t.Helper()
	locs := fakeNetwork(250)
	members, urls, fetches := fakePeers(t, locs)
	api, err := New(Options{Node: &fakeNode{id: "loc-us", region: "us-east", members: members}, Location: locs["loc-us"],
		Network: NetworkOptions{PeerURL: func(m Member) string { return urls[m.ID] }, Timeout: 2 * time.Second, CacheFor: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	return api, fetches
}

// fakePeers serves locs' loc-eu and loc-sa on HTTP servers that count their fetches, and
// gives loc-ap an address where nothing listens any more. It returns the four locations as
// members (loc-us among them, which the caller serves) and each peer's URL.
func fakePeers(t *testing.T, locs map[string]*fakeLocation) ([]Member, map[string]string, *atomic.Int64) {
	t.Helper()
	members := []Member{
		{ID: "loc-us", Region: "us-east", Roles: []string{"location"}, State: "alive"},
		{ID: "loc-eu", Region: "eu-west", Roles: []string{"location"}, State: "alive"},
		{ID: "loc-sa", Region: "sa-east", Roles: []string{"location"}, State: "alive"},
		{ID: "loc-ap", Region: "ap-south", Roles: []string{"location"}, State: "alive"},
	}
	urls := map[string]string{}
	fetches := new(atomic.Int64)
	for _, id := range []string{"loc-eu", "loc-sa"} {
		api, err := New(Options{Node: &fakeNode{id: id, region: "x", members: members}, Location: locs[id]})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fetches.Add(1)
			api.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		urls[id] = srv.URL
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	urls["loc-ap"] = gone.URL
	gone.Close() // loc-ap: nothing listens there any more
	return members, urls, fetches
}

// getNetwork asks api for GET /v1/network with query.
func getNetwork(t *testing.T, api *API, query string) NetworkView {
	t.Helper()
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/v1/network"+query, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/network%s: %d %s", query, rec.Code, rec.Body)
	}
	var v NetworkView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkNetworkPages pages through the view, 100 rows a page.
func checkNetworkPages(t *testing.T, get func(query string) NetworkView) {
	t.Helper()
	// Pages: 100, 100, 50, in order, no repeats.
	seen := map[string]bool{}
	cursor := ""
	for page := 0; page < 5; page++ {
		p := get("?limit=100&cursor=" + cursor)
		for _, r := range p.Rows {
			if seen[r.ID] {
				t.Fatalf("row %s twice", r.ID)
			}
			seen[r.ID] = true
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if len(seen) != 250 {
		t.Errorf("paged through %d rows, want 250", len(seen))
	}
}

// BenchmarkNetworkView10k measures a page of the network view at 10,000 checks and three
// locations, from the cached merge (what every request but one per CacheFor costs), and the
// merge itself. Every location has a history in which every check was observed for the last
// hour, so that each digest carries every check's 24-hour availability.
func BenchmarkNetworkView10k(b *testing.B) {
	locs := fakeNetwork(10000)
	now := time.Now()
	hs, err := history.Open(history.Options{}, now.Add(-time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	var changes []history.Change
	for i := range 10000 {
		changes = append(changes, history.Change{Check: fmt.Sprintf("check-%04d", i), At: now.Add(-time.Hour), To: "healthy", Healthy: 3, Fresh: 3})
	}
	if err := hs.Record(changes, nil); err != nil {
		b.Fatal(err)
	}
	var ds []*Digest
	for _, id := range []string{"loc-us", "loc-eu", "loc-sa"} {
		api, _ := New(Options{Node: &fakeNode{id: id}, Location: locs[id], History: storeHistory{hs}})
		d := api.digest()
		ds = append(ds, &d)
	}
	b.Run("merge", func(b *testing.B) {
		for b.Loop() {
			merge(nil, ds)
		}
	})
	api, _ := New(Options{Node: &fakeNode{id: "loc-us"}, Location: locs["loc-us"], History: storeHistory{hs}, Network: NetworkOptions{CacheFor: time.Hour}})
	api.net.view, api.net.at = merge(nil, ds), time.Now()
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/v1/network?filter=unhealthy&q=check", nil))
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code)
			}
		}
	})
	b.Run("digest", func(b *testing.B) {
		var size int
		for b.Loop() {
			body, _ := json.Marshal(api.digest())
			size = len(body)
		}
		b.ReportMetric(float64(size), "bytes/digest")
	})
}

// TestNetworkViewAvailability: a location's digest carries each check's healthy share of the
// last 24 hours from its history, and the merged view shows it in that location's cell; a
// check it never observed has none.
func TestNetworkViewAvailability(t *testing.T) {
	now := time.Now()
	hs, err := history.Open(history.Options{}, now.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Record([]history.Change{
		{Check: "check-0001", At: now.Add(-2 * time.Hour), From: "", To: "healthy", Healthy: 3, Fresh: 3},
		{Check: "check-0001", At: now.Add(-30 * time.Minute), From: "healthy", To: "unhealthy", Unhealthy: 3, Fresh: 3},
	}, nil); err != nil {
		t.Fatal(err)
	}
	locs := fakeNetwork(3)
	api, err := New(Options{Node: &fakeNode{id: "loc-us", region: "us-east"}, Location: locs["loc-us"], History: storeHistory{hs}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/v1/network", nil))
	var v NetworkView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/network: %d %v %s", rec.Code, err, rec.Body)
	}
	cells := map[string]NetworkCell{}
	for _, r := range v.Rows {
		cells[r.ID] = r.Cells["loc-us"]
	}
	// Healthy 90 of the 120 minutes observed, to the bucket (the day's buckets are hours).
	if a := cells["check-0001"].Availability24h; a == nil || *a < 0.7 || *a > 0.8 {
		t.Errorf("check-0001's 24-hour availability at loc-us: %v, want about 0.75", a)
	}
	if a := cells["check-0000"].Availability24h; a != nil {
		t.Errorf("check-0000, never observed, has an availability: %v", *a)
	}
	// The share is of the two hours observed, not of a day, and says so beside the figure.
	if o := cells["check-0001"].Observed24h; o < 119*time.Minute || o > 121*time.Minute {
		t.Errorf("check-0001 observed %v of the last 24 hours at loc-us, want about 2h", o)
	}
	if v.Rows[0].Agreement != AgreementAgree {
		t.Errorf("a network of one reachable location: agreement %q, want agree", v.Rows[0].Agreement)
	}
	var b strings.Builder
	if err := WriteNetwork(&b, v, now); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`check-0001 +yes +healthy 3/3 7\d\.\d\d% of (2h|1h59m) observed`).MatchString(b.String()) {
		t.Errorf("vigil status network does not show the window observed beside the availability:\n%s", b.String())
	}
}

// TestWriteNetworkUnreachable: in the CLI's table a check that the reachable locations agree on
// while one is unreachable reads "unknown", not "yes", and the header counts it apart.
func TestWriteNetworkUnreachable(t *testing.T) {
	v := NetworkView{Location: "loc-us", Checks: 2, Disagreements: 0, Unknown: 2, Matching: 2,
		Locations: []NetworkLocation{{ID: "loc-us", Reachable: true, Self: true}, {ID: "loc-ap", Error: "unreachable: refused"}},
		Rows: []NetworkRow{
			{ID: "a", Agreement: AgreementUnknown, Reason: "loc-ap unreachable: whether it agrees is unknown",
				Cells: map[string]NetworkCell{"loc-us": {State: "healthy", Healthy: 3, Fresh: 3}}},
			{ID: "b", Agreement: AgreementUnknown, Reason: "loc-ap unreachable: whether it agrees is unknown",
				Cells: map[string]NetworkCell{"loc-us": {State: "healthy", Healthy: 3, Fresh: 3}}},
		}}
	var b strings.Builder
	if err := WriteNetwork(&b, v, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"0 where locations disagree, 2 unknown (a location unreachable)",
		"a      unknown  healthy 3/3", "a: loc-ap unreachable: whether it agrees is unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)^a +yes`).MatchString(out) {
		t.Errorf("a check unknown at an unreachable location reads as agreeing:\n%s", out)
	}
}
