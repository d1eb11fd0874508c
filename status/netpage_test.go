package status

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/testproc"
	"github.com/vigil-dns/vigil/location/history"
)

// storeHistory is a HistoryView over a history.Store.
type storeHistory struct{ s *history.Store }

func (h storeHistory) CheckHistory(id string, now time.Time) (history.CheckHistory, bool) {
	return h.s.Check(id, now)
}

func (h storeHistory) HistorySummaries(after string, limit int, now time.Time) ([]history.CheckHistory, string) {
	return h.s.Summaries(after, limit, now)
}

func (h storeHistory) AnswerHistory(name string) []history.AnswerChange { return h.s.Answers(name) }

// TestNetworkPageInBrowser loads the page of loc-us, in a network where loc-sa hears only
// sa-east's checkers and disagrees on check-0001 and loc-ap cannot be reached, with
// check-0001 selected: the network table marks the disagreement with its reason and loc-ap as
// unreachable, the check's history shows its timeline and availability, and screenshots at
// phone and desktop width are saved.
func TestNetworkPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	bin := testproc.Chromium(t)
	locs := fakeNetwork(120)
	members, urls, _ := fakePeers(t, locs)
	now := time.Now()
	hs, err := history.Open(history.Options{}, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Record([]history.Change{
		{Check: "check-0001", At: now.Add(-time.Hour), From: "", To: "healthy", Healthy: 9, Fresh: 9},
		{Check: "check-0001", At: now.Add(-30 * time.Minute), From: "healthy", To: "unhealthy", Unhealthy: 3, Fresh: 3, Stale: 6},
	}, nil); err != nil {
		t.Fatal(err)
	}
	api, err := New(Options{Node: &fakeNode{id: "loc-us", region: "us-east", members: members}, Location: locs["loc-us"],
		History: storeHistory{hs}, Network: NetworkOptions{PeerURL: func(m Member) string { return urls[m.ID] }}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	dom := string(runChromium(t, bin, srv.URL+"/#check=check-0001", "--dump-dom"))
	table := regexp.MustCompile(`(?s)<table id="network-table">.*?</table>`).FindString(dom)
	row := regexp.MustCompile(`(?s)<tr[^>]*data-check="check-0001"[^>]*>.*?</tr>`).FindString(table)
	if !strings.Contains(row, `data-disagree="true"`) || !strings.Contains(row, `data-location="loc-sa" data-state="unhealthy"`) ||
		!strings.Contains(row, "loc-sa hears only sa-east checkers") {
		t.Errorf("check-0001's network row does not show loc-sa disagreeing with why:\n%s", row)
	}
	// loc-us, asked, has a history: check-0001 healthy for half of the hour it observed, which
	// the figure says beside it.
	if !regexp.MustCompile(`data-location="loc-us"[^>]*>[^<]* \x{00B7} (49|50)\.\d\d% of (59|60) minutes observed<`).MatchString(row) {
		t.Errorf("check-0001's network row does not show loc-us's 24-hour availability:\n%s", row)
	}
	if !strings.Contains(row, `data-location="loc-ap" data-state="unknown">unreachable`) {
		t.Errorf("check-0001's network row does not show loc-ap unreachable:\n%s", row)
	}
	if n := strings.Count(table, "<tr data-check="); n != 50 {
		t.Errorf("the network table shows %d rows, want a page of 50", n)
	}
	if !regexp.MustCompile(`<li data-location="loc-ap" data-reachable="false">loc-ap \(ap-south\): unreachable`).MatchString(dom) {
		t.Errorf("loc-ap not listed as unreachable")
	}
	if !strings.Contains(dom, "4 locations (1 unreachable from here), 120 checks, 1 where they disagree. Page 1: 50 of 120 matching.") {
		t.Errorf("network summary missing: %s", regexp.MustCompile(`<p id="network-summary"[^>]*>[^<]*`).FindString(dom))
	}
	timeline := regexp.MustCompile(`(?s)<ol id="history-timeline"[^>]*>.*?</ol>`).FindString(dom)
	if strings.Count(timeline, "<li") != 2 || !strings.Contains(timeline, "healthy \u2192 unhealthy, 0 of 3 fresh reports healthy, 6 stale") {
		t.Errorf("history timeline: %s", timeline)
	}
	// Half of the last hour healthy, to the minute (the hour's buckets are minutes).
	if !regexp.MustCompile(`Healthy (49|50)\.\d\d% of the last 1h \((59|60) minutes observed\), [\d.]+% of the last 24h \((59|60) minutes observed\)`).MatchString(dom) {
		t.Errorf("availability missing: %s", regexp.MustCompile(`<p id="history-availability"[^>]*>[^<]*`).FindString(dom))
	}
	screenshots(t, bin, srv.URL+"/#check=check-0001", "status-network", 1600, 1400)
}

// TestVerificationPageInBrowser: on a node that runs answer verification, the page shows what
// the verifier found: the judged answers and the share that disagreed, each location's last
// outcome with why, the failovers measured and the changes still waiting; on a node that runs
// none (GET /v1/verification is 404) the section stays hidden.
func TestVerificationPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	bin := testproc.Chromium(t)
	report, err := os.ReadFile("testdata/verification.json") // a verify.Report (verify's TestStatusPageFixture)
	if err != nil {
		t.Fatal(err)
	}
	locs := fakeNetwork(3)
	api, err := New(Options{Node: &fakeNode{id: "loc-us", region: "us-east"}, Location: locs["loc-us"]})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("GET /v1/verification", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(report)
	})
	with := httptest.NewServer(mux)
	t.Cleanup(with.Close)
	without := httptest.NewServer(api)
	t.Cleanup(without.Close)

	dom := string(runChromium(t, bin, with.URL+"/", "--dump-dom"))
	sec := regexp.MustCompile(`(?s)<section id="verification"[^>]*>.*?</section>`).FindString(dom)
	if strings.Contains(regexp.MustCompile(`<section id="verification"[^>]*>`).FindString(sec), "hidden") {
		t.Fatalf("the verification section is hidden on a node that verifies:\n%s", sec)
	}
	for _, want := range []string{
		"1200 answers judged, 3 (0.25%) disagreed with their location's verdicts; not answering: loc-sa.",
		`<tr data-location="loc-sa">`, `data-state="unhealthy">no answer</td>`, "10.0.3.2:5353: read udp: i/o timeout", "390 / 3 / 7",
		"www.demo.vigil.test. A: every location answered accordingly 2.40 s after the first verdict change (seen within 3.1 s; 3 locations changed)",
		"all.demo.vigil.test. A: changed", "waiting for loc-sa",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the verification section does not show %q:\n%s", want, sec)
		}
	}
	dom = string(runChromium(t, bin, without.URL+"/", "--dump-dom"))
	if !regexp.MustCompile(`<section id="verification"[^>]*hidden`).MatchString(dom) {
		t.Errorf("the verification section shows on a node that does not verify")
	}
	screenshots(t, bin, with.URL+"/", "status-verification", 1600, 1200)
}
