package dev

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/testproc"
	"github.com/vigil-dns/vigil/quorum"
)

// renderedPage loads url in headless Chromium, lets its script run (the page's first refresh
// answers within the virtual time budget) and returns the DOM it drew.
func renderedPage(t *testing.T, bin, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-extensions", "--disable-background-networking",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=10000", "--dump-dom", url)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	return stdout.String()
}

// pageSection returns a section of a rendered page by its id, and whether it is shown.
func pageSection(dom, id string) (string, bool) {
	whole := regexp.MustCompile(`(?s)<section id="` + id + `"[^>]*>.*?</section>`).FindString(dom)
	open := regexp.MustCompile(`<section id="` + id + `"[^>]*>`).FindString(whole)
	return whole, whole != "" && !strings.Contains(open, "hidden")
}

// pageText returns the text of the element with id (up to its first child element).
func pageText(dom, id string) string {
	return regexp.MustCompile(`<[a-z]+ id="` + id + `"[^>]*>([^<]*)`).FindStringSubmatch(dom + `<x id="` + id + `">`)[1]
}

// TestDevPagesInBrowser loads, in headless Chromium, the status pages of a running dev
// network (real checkers probing real targets, real locations answering DNS, real answer
// verifiers) once us-east's and eu-west's targets are down: a location's page draws its
// checks and the DNS view (www in last resort, its two records failing; all answered by
// sa-east alone, by rule), and a checker's page draws its probes and its answer verification
// of every location, with no "not a DNS location" error. Every assertion is on what the
// page's script rendered, not on the API.
func TestDevPagesInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a dev network and starts Chromium")
	}
	bin := testproc.Chromium(t)
	checkerHTTP := "127.0.0.1:" + strconv.Itoa(freePort(t))
	n := startEdited(t, func(cfg *Config) {
		cfg.CheckerHTTP = map[string][]string{"us-east": {checkerHTTP}}
	})
	regions := n.cfg.Regions
	verdicts := func(want map[string]quorum.State) func() (bool, string) {
		return func() (bool, string) {
			for _, r := range regions {
				v := n.Verdicts(r)
				for check, state := range want {
					if v[check].State != state {
						return false, fmt.Sprintf("%s holds %s %s", r, check, v[check].State)
					}
				}
			}
			return true, ""
		}
	}
	healthy := quorum.StateHealthy
	eventually(t, 30*time.Second, "every location holds every check healthy", verdicts(map[string]quorum.State{
		"web-us-east": healthy, "web-eu-west": healthy, "web-sa-east": healthy}))
	c := Client{BaseURL: n.ControlURL()}
	for _, r := range []string{"us-east", "eu-west"} {
		if _, err := c.SetTargetDown(t.Context(), r, true); err != nil {
			t.Fatal(err)
		}
	}
	// Detection is 3 probes at 1 s; the bound leaves room for a machine shared with builds.
	eventually(t, 30*time.Second, "every location holds us-east and eu-west unhealthy", verdicts(map[string]quorum.State{
		"web-us-east": quorum.StateUnhealthy, "web-eu-west": quorum.StateUnhealthy, "web-sa-east": healthy}))
	eventually(t, 10*time.Second, "every location answers all with sa-east alone", allAnswer(n, regions, "all.demo.vigil.test", "203.0.113.1"))
	eventually(t, 30*time.Second, "us-east's verifier has heard every location answer", func() (bool, string) {
		rep, ok := n.Verification("us-east")
		if !ok {
			return false, "us-east has no verifier"
		}
		if len(rep.Locations) != len(regions) {
			return false, strconv.Itoa(len(rep.Locations)) + " locations asked"
		}
		for _, l := range rep.Locations {
			if l.Outcomes["agree"] == 0 {
				return false, l.ID + " not yet agreeing"
			}
		}
		return true, ""
	})

	t.Run("location", func(t *testing.T) {
		dom := renderedPage(t, bin, "http://"+n.HTTPAddr("us-east")+"/")
		if e := regexp.MustCompile(`<p id="error"[^>]*>[^<]*`).FindString(dom); !strings.Contains(e, "hidden") {
			t.Errorf("the location's page shows an error: %s", e)
		}
		checks, shown := pageSection(dom, "checks")
		if !shown {
			t.Fatalf("no checks on a location's page: %.300s", checks)
		}
		for check, state := range map[string]string{"web-us-east": "unhealthy", "web-eu-west": "unhealthy", "web-sa-east": "healthy", "web-majority": "unhealthy"} {
			row := regexp.MustCompile(`(?s)<tr[^>]*data-check="` + check + `"[^>]*>.*?</tr>`).FindString(checks)
			if !strings.Contains(row, `data-state="`+state+`" class="verdict"`) {
				t.Errorf("%s is not drawn %s: %s", check, state, row)
			}
		}
		dnsView, shown := pageSection(dom, "dns")
		if !shown {
			t.Fatalf("no DNS view on a location's page: %.300s", dnsView)
		}
		row := func(set string) string {
			return regexp.MustCompile(`(?s)<tr data-set="` + regexp.QuoteMeta(set) + `"[^>]*>.*?</tr>`).FindString(dnsView)
		}
		for set, wants := range map[string][]string{
			// Both of www's records fail: last resort answers them both.
			"www.demo.vigil.test. A": {`data-last-resort="true"`, "<td>failover</td>", "yes: every record answered",
				"192.0.2.1 web-us-east unhealthy", "198.51.100.1 web-eu-west unhealthy"},
			// sa-east's record is healthy: every healthy record, the others left out.
			"all.demo.vigil.test. A": {`data-last-resort="false"`, "<td>203.0.113.1</td><td>multivalue</td><td>healthy</td>",
				"203.0.113.1 web-sa-east healthy \u2190", "192.0.2.1 web-us-east unhealthy;"},
			"api.demo.vigil.test. A": {`data-last-resort="false"`, "<td>203.0.113.1</td><td>weighted</td>"},
		} {
			r := row(set)
			for _, w := range wants {
				if !strings.Contains(r, w) {
					t.Errorf("the DNS view's row of %s lacks %q:\n%s", set, w, r)
				}
			}
		}
		if s := pageText(dom, "dns-summary"); s != "3 record sets consult a health check; 1 answer in last resort (no record healthy, every record answered)." {
			t.Errorf("the DNS view's summary: %q", s)
		}
	})

	t.Run("checker", func(t *testing.T) {
		dom := renderedPage(t, bin, "http://"+checkerHTTP+"/")
		// The page once stopped at the first 404 (/v1/verdicts) with "Cannot load the status:
		// this node is not a DNS location" and drew nothing else.
		if e := regexp.MustCompile(`<p id="error"[^>]*>[^<]*`).FindString(dom); !strings.Contains(e, "hidden") || strings.Contains(dom, "Cannot load") {
			t.Errorf("the checker's page shows an error: %s", e)
		}
		if s := pageText(dom, "summary"); s != "This node is a checker, not a DNS location: it shows what it probes and how locations answer." {
			t.Errorf("the checker's summary: %q", s)
		}
		for _, id := range []string{"checks", "dns"} {
			if _, shown := pageSection(dom, id); shown {
				t.Errorf("a location's section %q is shown on a checker", id)
			}
		}
		probes, shown := pageSection(dom, "probes")
		if !shown || !regexp.MustCompile(`Checker us-east-checker-1 \(us-east\) probes \d+ checks, \d+ failing; its own health: healthy\.`).MatchString(probes) {
			t.Errorf("the checker's probes: %.600s", probes)
		}
		ver, shown := pageSection(dom, "verification")
		if !shown {
			t.Fatalf("no answer verification on the checker's page: %.300s", ver)
		}
		if s := pageText(dom, "verification-summary"); !regexp.MustCompile(`^[1-9]\d* answers judged, 0 \(0\.00%\) disagreed with their location's verdicts; every location answering\.$`).MatchString(s) {
			t.Errorf("the verification's summary: %q", s)
		}
		for _, r := range regions {
			loc := r + "-location"
			row := regexp.MustCompile(`(?s)<tr data-location="` + loc + `">.*?</tr>`).FindString(ver)
			if !strings.Contains(row, "<td>"+loc+"</td>") || !regexp.MustCompile(`<td>[1-9]\d* / 0 / 0</td>`).MatchString(row) {
				t.Errorf("the verification's row of %s (agree / disagree / no answer): %s", loc, row)
			}
		}
	})
}
