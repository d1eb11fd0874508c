package status

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/internal/testproc"
)

// TestAnswersView: the DNS view lists every record set of the demo that consults a health
// check with what the location answers now (what GET /v1/answer gives for the set), its rule
// and whether last resort is in force; q and limit narrow it, and a location that cannot list
// its sets says how to ask for one.
func TestAnswersView(t *testing.T) {
	loc := newTestLocation(t)
	demoScenario(loc)
	// Both of www's records fail: its failover set answers in last resort.
	loc.reports["web-us-east"] = loc.reports["web-eu-west"]
	loc.evaluate()
	a, _, _ := newTestAPI(t, loc, nil)
	code, body := get(t, a, "/v1/answers")
	if code != http.StatusOK {
		t.Fatalf("GET /v1/answers: %d %s", code, body)
	}
	var l AnswerList
	decodeStrict(t, body, &l)
	if l.Location != "loc-us" || l.Sets != 3 || l.Matching != 3 || len(l.Answers) != 3 || l.LastResort != 1 {
		t.Fatalf("answers: %d sets, %d matching, %d listed, %d in last resort; want 3, 3, 3, 1:\n%s",
			l.Sets, l.Matching, len(l.Answers), l.LastResort, body)
	}
	var names []string
	for _, s := range l.Answers {
		names = append(names, s.Name+" "+s.Type)
	}
	if got := strings.Join(names, ", "); got != "all.demo.vigil.test. A, api.demo.vigil.test. A, www.demo.vigil.test. A" {
		t.Errorf("sets %s", got)
	}
	www := l.Answers[2]
	code, one := get(t, a, "/v1/answer?name=www.demo.vigil.test&type=A")
	var direct Answer
	decodeStrict(t, one, &direct)
	if code != http.StatusOK || !www.LastResort || www.Policy != "failover" || www.Rule != direct.Rule ||
		strings.Join(www.Values, " ") != strings.Join(direct.Values, " ") || www.Error != "" {
		t.Errorf("www in the DNS view: %+v; GET /v1/answer: %+v", www, direct)
	}
	if l.Answers[0].LastResort || len(l.Answers[0].Values) == 0 {
		t.Errorf("all.demo.vigil.test. A: %+v", l.Answers[0])
	}

	code, body = get(t, a, "/v1/answers?q=API&limit=1")
	decodeStrict(t, body, &l)
	if code != http.StatusOK || l.Matching != 1 || len(l.Answers) != 1 || l.Answers[0].Name != "api.demo.vigil.test." {
		t.Errorf("q=API: %d %s", code, body)
	}
	if code, body = get(t, a, "/v1/answers?limit=0"); code != http.StatusBadRequest {
		t.Errorf("limit=0: %d %s", code, body)
	}

	b, _, _ := newTestAPI(t, nil, nil)
	b.opts.Location = noSets{loc}
	if code, body = get(t, b, "/v1/answers"); code != http.StatusNotFound || !strings.Contains(string(body), "ask one set with /v1/answer?name=NAME") {
		t.Errorf("a location without HealthSetsView: %d %s", code, body)
	}
}

// noSets is a LocationView that cannot list its record sets.
type noSets struct{ LocationView }

// TestDNSViewInBrowser: a location's page, in headless Chromium, draws the DNS view: each
// record set with what it answers now, its rule, and last resort marked where it is in force
// (www, both of whose records fail), with a summary that counts it.
func TestDNSViewInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	bin := testproc.Chromium(t)
	loc := newTestLocation(t)
	demoScenario(loc)
	loc.reports["web-us-east"] = loc.reports["web-eu-west"]
	loc.evaluate()
	a, _, _ := newTestAPI(t, loc, nil)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)

	dom := string(runChromium(t, bin, srv.URL+"/", "--dump-dom"))
	sec := regexp.MustCompile(`(?s)<section id="dns"[^>]*>.*?</section>`).FindString(dom)
	if sec == "" || strings.Contains(regexp.MustCompile(`<section id="dns"[^>]*>`).FindString(sec), "hidden") {
		t.Fatalf("no DNS view on a location's page:\n%s", sec)
	}
	row := func(set string) string {
		return regexp.MustCompile(`(?s)<tr data-set="` + regexp.QuoteMeta(set) + `"[^>]*>.*?</tr>`).FindString(sec)
	}
	www := row("www.demo.vigil.test. A")
	for _, want := range []string{`data-last-resort="true"`, "<td>failover</td>", "yes: every record answered",
		"192.0.2.1 web-us-east unhealthy", "198.51.100.1 web-eu-west unhealthy"} {
		if !strings.Contains(www, want) {
			t.Errorf("www's row lacks %q:\n%s", want, www)
		}
	}
	all := row("all.demo.vigil.test. A")
	if !strings.Contains(all, `data-last-resort="false"`) || !strings.Contains(all, "<td>multivalue</td><td>healthy</td>") {
		t.Errorf("all's row:\n%s", all)
	}
	if !strings.Contains(sec, "3 record sets consult a health check; 1 answer in last resort (no record healthy, every record answered).") {
		t.Errorf("DNS view summary: %s", regexp.MustCompile(`<p id="dns-summary"[^>]*>[^<]*`).FindString(sec))
	}
	if e := regexp.MustCompile(`<p id="error"[^>]*>[^<]*`).FindString(dom); !strings.Contains(e, "hidden") {
		t.Errorf("the page shows an error: %s", e)
	}
	screenshots(t, bin, srv.URL+"/", "status-dns", 1200, 1200)
}
