package status

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/internal/testproc"
)

// checkerNode is the test node seen as a checker: the node us-1, without the location role.
type checkerNode struct{ *testNode }

func (n checkerNode) Identity() Identity {
	id := n.testNode.Identity()
	id.ID, id.Roles = "us-1", []string{"checker"}
	return id
}

// TestCheckerPageInBrowser loads, in headless Chromium, the page of a node that runs a real
// checker and an answer verifier but no DNS location (its /v1/verdicts answers 404): the page
// shows no error, hides the location's sections, and draws what a checker has: its probes (one
// check up, one down), the answer verification and the members it sees, with an update time.
func TestCheckerPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium and probes real HTTP servers")
	}
	bin := testproc.Chromium(t)
	report, err := os.ReadFile("testdata/verification.json") // a verify.Report (verify's TestStatusPageFixture)
	if err != nil {
		t.Fatal(err)
	}
	api, err := New(Options{Node: checkerNode{newTestNode()}, Checker: startChecker(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The node mounts its verifier's report beside the status API, as vigil agent does.
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("GET /v1/verification", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(report)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	dom := string(runChromium(t, bin, srv.URL+"/", "--dump-dom"))
	section := func(id string) (open string, whole string) {
		whole = regexp.MustCompile(`(?s)<section id="` + id + `"[^>]*>.*?</section>`).FindString(dom)
		return regexp.MustCompile(`<section id="` + id + `"[^>]*>`).FindString(whole), whole
	}
	if e := regexp.MustCompile(`<p id="error"[^>]*>[^<]*`).FindString(dom); !strings.Contains(e, "hidden") || strings.Contains(e, "Cannot") {
		t.Errorf("the checker's page shows an error: %s", e)
	}
	for _, id := range []string{"checks", "network"} {
		if open, _ := section(id); !strings.Contains(open, "hidden") {
			t.Errorf("a location's section %q shows on a checker: %s", id, open)
		}
	}
	for id, wants := range map[string][]string{
		"probes": {"Checker us-1 (us-east) probes 2 checks, 1 failing; its own health: healthy.",
			`<tr data-check="up">`, `data-state="healthy">` + "\u2714 healthy", `<tr data-check="down">`,
			`data-state="unhealthy">` + "\u2716 unhealthy", "status: "},
		"verification": {"1200 answers judged, 3 (0.25%) disagreed with their location's verdicts; not answering: loc-sa.",
			`<tr data-location="loc-sa">`},
		"members": {"7 members, 7 alive.", `<tr data-member="us-1">`},
	} {
		open, whole := section(id)
		if whole == "" || strings.Contains(open, "hidden") {
			t.Errorf("section %q is not shown on a checker: %q", id, open)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(whole, w) {
				t.Errorf("section %q lacks %q:\n%s", id, w, whole)
			}
		}
	}
	if !strings.Contains(dom, "This node is a checker, not a DNS location: it shows what it probes and how locations answer.") {
		t.Errorf("no summary of what the node is: %s", regexp.MustCompile(`<p id="summary"[^>]*>[^<]*`).FindString(dom))
	}
	if !strings.Contains(dom, "\u2014 us-1 (us-east): checker") {
		t.Errorf("the title does not name the checker")
	}
	if u := regexp.MustCompile(`<time id="updated"[^>]*>[^<]*`).FindString(dom); strings.Contains(u, "never") || !strings.Contains(u, "datetime=") {
		t.Errorf("the update time is not set after a refresh that worked: %s", u)
	}
	screenshots(t, bin, srv.URL+"/", "status-checker", 1200, 1000)
}
